DROP TABLE harvest_webhooks;
