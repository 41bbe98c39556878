DROP TABLE harvest_tokens;
