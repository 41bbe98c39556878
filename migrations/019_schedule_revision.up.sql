-- 019_schedule_revision: the catalog revision of a schedule's copy.
--
-- On a raft cluster the schedules shard copies each definition from the
-- catalog (engine SyncSchedule), from the leader's answer to a change and
-- from the node's own replica, which may lag behind it. catalog_revision
-- is the catalog's version of what the copy holds (the raft index of the
-- definition's last change), so that an older copy never undoes a newer
-- pause or resume. Zero: unversioned.
ALTER TABLE harvest_schedules ADD COLUMN catalog_revision bigint NOT NULL DEFAULT 0;
