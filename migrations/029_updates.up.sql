-- Updates (issue 44): an update's result is its UpdateCompleted event,
-- found by its update id within the run's continue-as-new chain. Only
-- those events are indexed: other appends pay the index's predicate alone.
CREATE INDEX harvest_events_update ON harvest_events ((data->>'update_id'))
    WHERE event_type = 'UpdateCompleted';
