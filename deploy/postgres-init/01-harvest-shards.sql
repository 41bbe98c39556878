-- Run once by the official postgres image on its first start (mounted at
-- /docker-entrypoint-initdb.d): the two shard databases of
-- docker-compose.cluster.yml. harvestd migrates each on first use.
CREATE DATABASE harvest_shard0;
CREATE DATABASE harvest_shard1;
