# shellcheck shell=bash
# base_images: the three base images docker-compose.cluster.yml and the
# Dockerfile name (golang, debian, postgres), made on this machine from
# Debian's packages for a machine that can pull nothing, and exported as
# HARVEST_GO_IMAGE, HARVEST_DEBIAN_IMAGE and HARVEST_POSTGRES_IMAGE, the
# variables the compose file reads:
#
#   harvest-local/debian:<hash>    one mmdebstrap rootfs of Debian bookworm
#                                  (minbase, with ca-certificates, curl and
#                                  postgresql-15), docker import-ed;
#   harvest-local/golang:<hash>    that rootfs plus this host's Go toolchain
#                                  (`go env GOROOT`, copied to /usr/local/go;
#                                  GOPATH=/go, GOTOOLCHAIN=local) and this
#                                  host's CA bundle (HARVEST_CA_BUNDLE,
#                                  default /etc/ssl/certs/ca-certificates.crt):
#                                  modules come from the module proxy, as for
#                                  golang:1.26-bookworm, and a machine whose
#                                  way out re-signs TLS with a CA of its own
#                                  reaches the proxy from inside the build;
#   harvest-local/postgres:<hash>  that rootfs with Debian's PostgreSQL 15 and
#                                  scripts/lib/postgres-entrypoint.sh, which
#                                  honours POSTGRES_USER, POSTGRES_PASSWORD,
#                                  POSTGRES_DB and /docker-entrypoint-initdb.d
#                                  as postgres:17's entrypoint does.
#
# Each tag is a hash of what went into the image (this file, the package list,
# the mirror, the Go version, the entrypoint); an image already there under its
# tag is reused ("reusing ..."). The rootfs needs mmdebstrap (installed with
# apt-get when root and missing) and deb.debian.org (HARVEST_DEBIAN_MIRROR to
# change it). Images are built with the classic builder (no buildx needed).

HARVEST_DEBIAN_SUITE=bookworm
HARVEST_DEBIAN_PACKAGES=ca-certificates,curl,postgresql-15

base_images() {
	local lib mirror recipe h
	lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	mirror=${HARVEST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
	# Each hash covers the function that makes the image, not this whole file.
	recipe="$(declare -f _make_debian_image) $HARVEST_DEBIAN_SUITE $mirror $HARVEST_DEBIAN_PACKAGES"
	h=$(printf '%s' "$recipe" | sha256sum | cut -c1-12)

	HARVEST_DEBIAN_IMAGE=harvest-local/debian:$h
	if _base_image_exists "$HARVEST_DEBIAN_IMAGE"; then
		echo "base-images: reusing $HARVEST_DEBIAN_IMAGE"
	else
		_make_debian_image "$HARVEST_DEBIAN_IMAGE" "$mirror"
	fi

	local goroot gover gh
	goroot=$(go env GOROOT)
	gover=$(go env GOVERSION)
	local cabundle=${HARVEST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
	gh=$(printf '%s %s %s %s' "$h" "$(declare -f _make_go_image)" "$gover" "$(sha256sum "$cabundle" | cut -d' ' -f1)" | sha256sum | cut -c1-12)
	HARVEST_GO_IMAGE=harvest-local/golang:$gh
	if _base_image_exists "$HARVEST_GO_IMAGE"; then
		echo "base-images: reusing $HARVEST_GO_IMAGE ($gover)"
	else
		_make_go_image "$HARVEST_GO_IMAGE" "$HARVEST_DEBIAN_IMAGE" "$goroot" "$gover" "$cabundle"
	fi

	local ph
	ph=$(printf '%s %s %s' "$h" "$(declare -f _make_postgres_image)" "$(sha256sum "$lib/postgres-entrypoint.sh" | cut -d' ' -f1)" | sha256sum | cut -c1-12)
	HARVEST_POSTGRES_IMAGE=harvest-local/postgres:$ph
	if _base_image_exists "$HARVEST_POSTGRES_IMAGE"; then
		echo "base-images: reusing $HARVEST_POSTGRES_IMAGE"
	else
		_make_postgres_image "$HARVEST_POSTGRES_IMAGE" "$HARVEST_DEBIAN_IMAGE" "$lib/postgres-entrypoint.sh"
	fi
	export HARVEST_DEBIAN_IMAGE HARVEST_GO_IMAGE HARVEST_POSTGRES_IMAGE
}

_base_image_exists() {
	docker image inspect "$1" >/dev/null 2>&1
}

_make_debian_image() {
	local tag=$1 mirror=$2 start=$SECONDS
	if ! command -v mmdebstrap >/dev/null; then
		if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
			echo "base-images: installing mmdebstrap (apt-get)"
			apt-get install -y -qq mmdebstrap >/dev/null 2>&1 ||
				{ apt-get update -qq && apt-get install -y -qq mmdebstrap >/dev/null; }
		else
			echo "base-images: mmdebstrap is missing (apt-get install mmdebstrap)" >&2
			return 1
		fi
	fi
	echo "base-images: making $tag (mmdebstrap $HARVEST_DEBIAN_SUITE minbase + $HARVEST_DEBIAN_PACKAGES from $mirror)"
	# A tarball first, imported only once mmdebstrap succeeded (an image
	# under the tag is reused as it is). No man pages or docs; no package
	# lists (apt-get update first, as in debian:bookworm-slim); no default
	# PostgreSQL cluster (the entrypoint makes its own).
	local tarball
	tarball=$(mktemp --suffix=.tar)
	# shellcheck disable=SC2016 # the hook's $1 is mmdebstrap's, not ours
	if ! mmdebstrap --quiet --variant=minbase --include="$HARVEST_DEBIAN_PACKAGES" \
		--aptopt='Acquire::Languages "none"' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--customize-hook='rm -rf "$1"/var/lib/postgresql/15/main "$1"/etc/postgresql/15/main "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
		"$HARVEST_DEBIAN_SUITE" "$tarball" "$mirror"; then
		rm -f "$tarball"
		echo "base-images: mmdebstrap failed" >&2
		return 1
	fi
	docker import \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'CMD ["bash"]' \
		--message "harvest base-images: $HARVEST_DEBIAN_SUITE minbase + $HARVEST_DEBIAN_PACKAGES" \
		"$tarball" "$tag" >/dev/null
	rm -f "$tarball"
	echo "base-images: made $tag in $((SECONDS - start)) s"
}

_make_go_image() {
	local tag=$1 from=$2 goroot=$3 gover=$4 cabundle=$5 ctx start=$SECONDS
	echo "base-images: making $tag ($from + $gover from $goroot + the CA bundle $cabundle)"
	ctx=$(mktemp -d)
	cp "$cabundle" "$ctx/ca-certificates.crt"
	cat >"$ctx/Dockerfile" <<EOF
FROM $from
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY go /usr/local/go
ENV GOPATH=/go GOTOOLCHAIN=local \\
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /go/bin /go/src && go version
WORKDIR /go
EOF
	# The context is a tarball on stdin: the Dockerfile and GOROOT as go/.
	tar -c -C "$ctx" Dockerfile ca-certificates.crt -C "$(dirname "$goroot")" \
		--exclude='*/test' --exclude='*/.git' \
		--transform="s,^$(basename "$goroot"),go," "$(basename "$goroot")" |
		DOCKER_BUILDKIT=0 docker build -q -t "$tag" - >/dev/null
	rm -rf "$ctx"
	echo "base-images: made $tag in $((SECONDS - start)) s"
}

_make_postgres_image() {
	local tag=$1 from=$2 entrypoint=$3 ctx start=$SECONDS
	echo "base-images: making $tag ($from + Debian's PostgreSQL 15)"
	ctx=$(mktemp -d)
	cp "$entrypoint" "$ctx/docker-entrypoint.sh"
	cat >"$ctx/Dockerfile" <<EOF
FROM $from
COPY docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    PGDATA=/var/lib/postgresql/data
RUN chmod 0755 /usr/local/bin/docker-entrypoint.sh && \\
    mkdir -p /docker-entrypoint-initdb.d /var/run/postgresql "\$PGDATA" && \\
    chown postgres:postgres /var/run/postgresql "\$PGDATA" && chmod 0700 "\$PGDATA"
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
EOF
	DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx" >/dev/null
	rm -rf "$ctx"
	echo "base-images: made $tag in $((SECONDS - start)) s"
}
