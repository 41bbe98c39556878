-- Flow control's start path (issue 43), made cheaper.
--
-- A run that takes its slot in its start has no fairness turn (flow_turn
-- is NULL: only queued runs take turns), so the turn index, which only
-- the last turn of a key's live runs is read from, leaves it out: one
-- index entry fewer for every limited start that runs at once.
DROP INDEX harvest_executions_flow_turn;
CREATE INDEX harvest_executions_flow_turn ON harvest_executions (workflow_name, flow_key, fairness_key, flow_turn)
    WHERE flow_turn IS NOT NULL AND state IN ('QUEUED', 'RUNNING');

-- harvest_flow_use takes the flow locks (advisory locks of class lock_class)
-- of the keys (n[i], k[i]) in hash order, and then reads each key's use:
-- its RUNNING limited runs counted up to its limit m[i] less its take t[i]
-- plus one (enough to tell whether the take fits), and whether some run
-- of the key is QUEUED. One statement where there were two: the function
-- is VOLATILE, so the read, a query of its own after the locks, sees every
-- earlier holder's commit (a fresh snapshot per query in READ COMMITTED).
CREATE FUNCTION harvest_flow_use(lock_class int, n text[], k text[], m bigint[], t bigint[])
RETURNS TABLE (i bigint, running bigint, queued boolean, max bigint, take bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM count(pg_advisory_xact_lock(lock_class, s.h))
       FROM (SELECT DISTINCT hashtext(u.n || '/' || u.k) AS h
               FROM unnest(n, k) AS u(n, k) ORDER BY h) s;
    RETURN QUERY
    SELECT u.i - 1,
           (SELECT count(*) FROM (SELECT 1 FROM harvest_executions x
                                   WHERE x.workflow_name = u.n AND x.flow_key = u.k AND x.state = 'RUNNING'
                                   LIMIT greatest(u.m - u.t + 1, 0)) c),
           EXISTS (SELECT 1 FROM harvest_executions x
                    WHERE x.workflow_name = u.n AND x.flow_key = u.k AND x.state = 'QUEUED'),
           u.m, u.t
      FROM unnest(n, k, m, t) WITH ORDINALITY AS u(n, k, m, t, i);
END
$$;
