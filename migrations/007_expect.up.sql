-- harvest_expect raises unless ok is true. A transaction sent whole in one
-- round trip (a start batch that assumed its keys fresh, engine/one_trip.go)
-- checks each assumption with it: one that does not hold raises SQLSTATE
-- HR001 before the COMMIT, so nothing of the transaction is written. The
-- message names the assumption.
CREATE FUNCTION harvest_expect(ok boolean, what text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'expected %', what USING ERRCODE = 'HR001';
    END IF;
    RETURN true;
END;
$$;
