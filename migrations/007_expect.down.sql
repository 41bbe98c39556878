DROP FUNCTION harvest_expect(boolean, text);
