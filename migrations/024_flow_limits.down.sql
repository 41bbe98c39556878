DROP TABLE harvest_flow_limits;
