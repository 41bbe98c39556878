DROP TABLE harvest_http_activities;
