#!/usr/bin/env bash
# make-certs.sh DIR [HOST_OR_IP ...]: a CA and one node certificate for a
# local cluster (harvestd --tls-cert DIR/node.pem --tls-key DIR/node-key.pem
# --tls-ca DIR/ca.pem; harvestctl --ca-cert DIR/ca.pem). The node
# certificate names localhost, 127.0.0.1 and every HOST_OR_IP given, and
# serves as server and client certificate (mutual TLS between nodes).
# Never commit what it writes: DIR is ignored by git when it is certs/.
set -euo pipefail
dir=${1:?usage: make-certs.sh DIR [HOST_OR_IP ...]}
shift
mkdir -p "$dir"
umask 077
san="DNS:localhost,IP:127.0.0.1"
for h in "$@"; do
	if [[ $h =~ ^[0-9.]+$ || $h == *:* ]]; then san+=",IP:$h"; else san+=",DNS:$h"; fi
done
openssl ecparam -name prime256v1 -genkey -noout -out "$dir/ca-key.pem"
openssl req -x509 -new -key "$dir/ca-key.pem" -sha256 -days 365 -subj "/CN=harvest local CA" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" -out "$dir/ca.pem"
openssl ecparam -name prime256v1 -genkey -noout -out "$dir/node-key.pem"
openssl req -new -key "$dir/node-key.pem" -subj "/CN=harvest node" -out "$dir/node.csr"
openssl x509 -req -in "$dir/node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca-key.pem" -CAcreateserial -sha256 -days 90 \
	-extfile <(printf 'subjectAltName=%s\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n' "$san") \
	-out "$dir/node.pem" 2>/dev/null
rm -f "$dir/node.csr" "$dir/ca.srl"
echo "wrote $dir/ca.pem, $dir/node.pem and $dir/node-key.pem (keep ca-key.pem to sign more)"
