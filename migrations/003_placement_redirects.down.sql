DROP TABLE IF EXISTS harvest_placement_redirects;
