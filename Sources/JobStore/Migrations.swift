import Logging
import PostgresNIO

/// One step of the schema. Versions only ever grow; a released migration is never edited, and none
/// drops or rewrites data that exists (new columns get defaults, new constraints are added `NOT VALID`
/// first if old rows might break them).
public struct Migration: Sendable {
    public var version: Int
    public var name: String
    /// Run one by one (PostgreSQL's extended protocol takes one statement per query).
    public var statements: [String]
}

public enum Migrations {
    /// The lock every process takes before looking at `schema_migrations`, so that several API nodes
    /// and workers starting at once apply each migration exactly once. 0x4D4F4D454E5453 is "MOMENTS".
    static let advisoryLockKey: Int64 = 0x4D4F_4D45_4E54_53

    public static let all: [Migration] = [
        Migration(
            version: 1, name: "jobs and job_events",
            statements: [
                """
                CREATE TABLE jobs (
                    id                uuid PRIMARY KEY,
                    owner             text,
                    status            text NOT NULL DEFAULT 'pending'
                                      CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'cancelled')),
                    progress          smallint NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
                    stage             text,
                    message           text,
                    error_code        text,
                    error_message     text,
                    original_filename text,
                    source_key        text NOT NULL,
                    source_size       bigint CHECK (source_size >= 0),
                    result_key        text,
                    result_size       bigint CHECK (result_size >= 0),
                    target_duration   double precision NOT NULL CHECK (target_duration > 0),
                    quality           text NOT NULL CHECK (quality IN ('high', 'medium', 'low')),
                    source_duration   double precision,
                    segments_selected integer,
                    attempt           integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
                    max_attempts      integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
                    run_after         timestamptz NOT NULL DEFAULT now(),
                    lease_owner       text,
                    lease_expires_at  timestamptz,
                    created_at        timestamptz NOT NULL DEFAULT now(),
                    started_at        timestamptz,
                    completed_at      timestamptz,
                    updated_at        timestamptz NOT NULL DEFAULT now(),
                    CHECK ((status = 'processing') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
                )
                """,
                "COMMENT ON TABLE jobs IS 'One row per highlight job; status is the truth the queue in Redis follows.'",
                "COMMENT ON COLUMN jobs.attempt IS 'Attempts started so far; also the fencing token every transition names.'",
                "COMMENT ON COLUMN jobs.run_after IS 'A pending job may start from this time on (retry backoff).'",
                "COMMENT ON COLUMN jobs.completed_at IS 'When the job reached a terminal status (completed, failed or cancelled).'",
                """
                CREATE TABLE job_events (
                    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    job_id      uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
                    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
                    from_status text CHECK (from_status IN ('pending', 'processing', 'completed', 'failed', 'cancelled')),
                    to_status   text NOT NULL CHECK (to_status IN ('pending', 'processing', 'completed', 'failed', 'cancelled')),
                    attempt     integer NOT NULL,
                    worker      text,
                    detail      text
                )
                """,
                "COMMENT ON TABLE job_events IS 'One row per status change of a job: what happened to job X is one query.'",
                "CREATE INDEX job_events_job ON job_events (job_id, id)",
                "CREATE INDEX jobs_pending ON jobs (run_after) WHERE status = 'pending'",
                "CREATE INDEX jobs_processing_lease ON jobs (lease_expires_at) WHERE status = 'processing'",
                "CREATE INDEX jobs_completed_at ON jobs (completed_at) WHERE completed_at IS NOT NULL",
                "CREATE INDEX jobs_failed_code ON jobs (error_code) WHERE status = 'failed'",
                "CREATE INDEX jobs_owner_created ON jobs (owner, created_at DESC)",
            ]),
        Migration(
            version: 2, name: "admin views",
            statements: [
                """
                CREATE VIEW admin_waiting AS
                SELECT count(*) AS waiting,
                       count(*) FILTER (WHERE run_after > now()) AS waiting_for_retry,
                       now() - min(created_at) AS oldest_wait
                FROM jobs WHERE status = 'pending'
                """,
                throughputView(per: "hour"),
                throughputView(per: "day"),
                """
                CREATE VIEW admin_failures AS
                SELECT error_code, count(*) AS jobs, max(completed_at) AS last_seen
                FROM jobs WHERE status = 'failed'
                GROUP BY error_code
                """,
                """
                CREATE VIEW admin_workers AS
                SELECT lease_owner AS worker, id AS job_id, attempt, stage, progress, message, started_at,
                       lease_expires_at, lease_expires_at < now() AS lease_expired
                FROM jobs WHERE status = 'processing'
                """,
                """
                CREATE VIEW admin_job_history AS
                SELECT e.job_id, e.at, e.from_status, e.to_status, e.attempt, e.worker, e.detail
                FROM job_events e
                """,
            ]),
        Migration(
            version: 3, name: "selected segments",
            statements: [
                "ALTER TABLE jobs ADD COLUMN segments jsonb",
                "COMMENT ON COLUMN jobs.segments IS 'The parts of the source the highlight shows: [{\"start\": s, \"end\": s, \"score\": 0..1}]'",
            ]),
        Migration(
            version: 4, name: "change notifications",
            statements: [
                """
                CREATE FUNCTION moments_notify_job_change() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status OR NEW.progress IS DISTINCT FROM OLD.progress
                       OR NEW.message IS DISTINCT FROM OLD.message THEN
                        PERFORM pg_notify('moments_jobs', NEW.id::text);
                    END IF;
                    RETURN NEW;
                END
                $$
                """,
                "CREATE TRIGGER jobs_notify_change AFTER INSERT OR UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION moments_notify_job_change()",
            ]),
        Migration(
            version: 5, name: "devices, plans and webhooks",
            statements: [
                """
                CREATE TABLE devices (
                    id           uuid PRIMARY KEY,
                    token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
                    name         text,
                    plan         text NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'pro')),
                    created_at   timestamptz NOT NULL DEFAULT now(),
                    revoked_at   timestamptz
                )
                """,
                "COMMENT ON TABLE devices IS 'One row per app install holding a token; only the SHA-256 of the token is kept.'",
                "COMMENT ON COLUMN devices.plan IS 'free: a monthly highlight quota; pro: unlimited. Set with UPDATE devices SET plan = ''pro'' WHERE id = ...'",
                "COMMENT ON COLUMN devices.revoked_at IS 'Set to refuse the token from now on.'",
                "ALTER TABLE jobs ADD COLUMN callback_url text",
                "COMMENT ON COLUMN jobs.callback_url IS 'Gets a signed POST when the job reaches a terminal status.'",
                """
                CREATE TABLE webhook_deliveries (
                    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    job_id          uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
                    url             text NOT NULL,
                    event           text NOT NULL,
                    created_at      timestamptz NOT NULL DEFAULT now(),
                    next_attempt_at timestamptz NOT NULL DEFAULT now(),
                    attempts        integer NOT NULL DEFAULT 0,
                    last_attempt_at timestamptz,
                    last_status     integer,
                    last_error      text,
                    delivered_at    timestamptz,
                    gave_up_at      timestamptz
                )
                """,
                "COMMENT ON TABLE webhook_deliveries IS 'One row per webhook to send, written by a trigger in the statement that ends the job.'",
                "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE delivered_at IS NULL AND gave_up_at IS NULL",
                "CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id)",
                """
                CREATE FUNCTION moments_queue_webhook() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO webhook_deliveries (job_id, url, event) VALUES (NEW.id, NEW.callback_url, 'job.' || NEW.status);
                    RETURN NEW;
                END
                $$
                """,
                """
                CREATE TRIGGER jobs_queue_webhook AFTER UPDATE OF status ON jobs FOR EACH ROW
                WHEN (NEW.callback_url IS NOT NULL AND NEW.status IN ('completed', 'failed', 'cancelled')
                      AND OLD.status IS DISTINCT FROM NEW.status)
                EXECUTE FUNCTION moments_queue_webhook()
                """,
                """
                CREATE VIEW admin_webhooks AS
                SELECT id, job_id, event, url, attempts, last_status, last_error, created_at, last_attempt_at,
                       CASE WHEN delivered_at IS NOT NULL THEN 'delivered' WHEN gave_up_at IS NOT NULL THEN 'given up'
                            ELSE 'waiting' END AS state,
                       coalesce(delivered_at, gave_up_at, next_attempt_at) AS at
                FROM webhook_deliveries
                """,
                """
                CREATE VIEW admin_usage AS
                SELECT d.id AS device, d.name, d.plan, d.created_at, d.revoked_at,
                       count(j.id) FILTER (WHERE j.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                                             AND j.status NOT IN ('failed', 'cancelled')) AS highlights_this_month,
                       count(j.id) AS jobs_ever
                FROM devices d LEFT JOIN jobs j ON j.owner = d.id::text
                GROUP BY d.id
                """,
            ]),
        Migration(
            version: 6, name: "retention",
            statements: [
                "ALTER TABLE jobs ADD COLUMN source_deleted_at timestamptz, ADD COLUMN result_expired_at timestamptz",
                "COMMENT ON COLUMN jobs.source_deleted_at IS 'When the uploaded source was deleted from storage (after success, or by the retention sweep).'",
                "COMMENT ON COLUMN jobs.result_expired_at IS 'When the retention sweep deleted the job''s objects (highlight and source); the row stays until it expires too.'",
                "CREATE INDEX jobs_finished ON jobs (completed_at) WHERE completed_at IS NOT NULL",
                """
                CREATE VIEW admin_storage AS
                SELECT count(*) FILTER (WHERE result_key IS NOT NULL AND result_expired_at IS NULL) AS highlights_stored,
                       coalesce(sum(result_size) FILTER (WHERE result_key IS NOT NULL AND result_expired_at IS NULL), 0) AS highlight_bytes,
                       count(*) FILTER (WHERE source_deleted_at IS NULL AND result_expired_at IS NULL) AS sources_stored,
                       coalesce(sum(source_size) FILTER (WHERE source_deleted_at IS NULL AND result_expired_at IS NULL), 0) AS source_bytes,
                       count(*) FILTER (WHERE result_expired_at IS NOT NULL) AS jobs_expired,
                       min(completed_at) FILTER (WHERE result_expired_at IS NULL) AS oldest_with_objects
                FROM jobs
                """,
            ]),
        Migration(
            version: 7, name: "video codec choice",
            statements: [
                "ALTER TABLE jobs ADD COLUMN codec text NOT NULL DEFAULT 'auto' CHECK (codec IN ('auto', 'h264'))",
                "COMMENT ON COLUMN jobs.codec IS 'auto: copy the source''s H.264/HEVC between keyframes where it allows, else H.264; h264: always encode H.264 (HDR tone-mapped).'",
            ]),
        Migration(
            version: 8, name: "operator console",
            statements: [
                // The console's job list: newest first, by (created_at, id) cursors, filtered or not.
                "CREATE INDEX jobs_created ON jobs (created_at DESC, id DESC)",
                "CREATE INDEX jobs_status_created ON jobs (status, created_at DESC, id DESC)",
                "CREATE INDEX jobs_code_created ON jobs (error_code, created_at DESC, id DESC) WHERE error_code IS NOT NULL",
                // pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may create it.
                "CREATE EXTENSION IF NOT EXISTS pg_trgm",
                "CREATE INDEX jobs_filename_trgm ON jobs USING gin (lower(original_filename) gin_trgm_ops)",
                """
                CREATE TABLE workers (
                    id                text PRIMARY KEY,
                    host              text NOT NULL,
                    pid               integer NOT NULL,
                    version           text NOT NULL,
                    concurrency       integer NOT NULL CHECK (concurrency >= 1),
                    started_at        timestamptz NOT NULL DEFAULT now(),
                    last_heartbeat_at timestamptz NOT NULL DEFAULT now(),
                    stopped_at        timestamptz,
                    running           integer NOT NULL DEFAULT 0 CHECK (running >= 0),
                    jobs_finished     bigint NOT NULL DEFAULT 0
                )
                """,
                "COMMENT ON TABLE workers IS 'One row per worker process: written at start, every heartbeat and at a clean stop. A row whose heartbeat is old and that never stopped is a worker that died.'",
                "CREATE INDEX workers_heartbeat ON workers (last_heartbeat_at DESC)",
                """
                CREATE TABLE admin_operations (
                    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    actor        text NOT NULL,
                    action       text NOT NULL CHECK (action IN ('retry', 'cancel', 'delete', 'pause', 'resume', 'redeliver')),
                    job_id       uuid,
                    filter       jsonb,
                    state        text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'failed', 'stopped')),
                    matched      integer,
                    done         integer NOT NULL DEFAULT 0,
                    skipped      integer NOT NULL DEFAULT 0,
                    failed       integer NOT NULL DEFAULT 0,
                    message      text,
                    cutoff       timestamptz NOT NULL DEFAULT now(),
                    cursor_at    timestamptz,
                    cursor_id    uuid,
                    runner       text,
                    heartbeat_at timestamptz,
                    created_at   timestamptz NOT NULL DEFAULT now(),
                    finished_at  timestamptz
                )
                """,
                "COMMENT ON TABLE admin_operations IS 'The audit log: every operator action (console or command line), who did it and how it went; a bulk action also keeps its progress and cursor here, so another API node resumes it if its runner dies.'",
                "CREATE INDEX admin_operations_running ON admin_operations (heartbeat_at NULLS FIRST) WHERE state = 'running'",
                "ALTER TABLE webhook_deliveries ADD COLUMN redelivery_of bigint REFERENCES webhook_deliveries (id) ON DELETE SET NULL",
                "COMMENT ON COLUMN webhook_deliveries.redelivery_of IS 'Set on a delivery an operator asked for again: the delivery it repeats.'",
            ]),
        Migration(
            version: 9, name: "trace context",
            statements: [
                "ALTER TABLE jobs ADD COLUMN trace_context jsonb CHECK (jsonb_typeof(trace_context) = 'object')",
                "COMMENT ON COLUMN jobs.trace_context IS 'The trace the job belongs to, as the request that created it was traced (W3C traceparent and tracestate): each attempt and webhook delivery continues it. NULL when tracing was off.'",
            ]),
        Migration(
            version: 10, name: "idempotency keys and own job lists",
            statements: [
                """
                CREATE TABLE idempotency_keys (
                    owner       text NOT NULL,
                    key         text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
                    endpoint    text NOT NULL CHECK (endpoint IN ('upload', 'uploads')),
                    fingerprint text NOT NULL,
                    job_id      uuid NOT NULL,
                    created_at  timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (owner, key)
                )
                """,
                "COMMENT ON TABLE idempotency_keys IS 'Idempotency-Key headers of submissions, per owner (empty for anonymous use), for 24 hours: the same key with the same request answers the same job; with another request it is refused. The retention sweep deletes older ones.'",
                "CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)",
                // A device's own jobs, newest first by (created_at, id) cursors (GET /api/v1/jobs); it
                // serves the monthly usage count too, so the narrower index goes.
                "CREATE INDEX jobs_owner_list ON jobs (owner, created_at DESC, id DESC)",
                "DROP INDEX jobs_owner_created",
            ]),
        Migration(
            version: 11, name: "highlight choices, poster and thumbnails",
            statements: [
                """
                ALTER TABLE jobs
                    ADD COLUMN min_segment double precision CHECK (min_segment BETWEEN 1 AND 60),
                    ADD COLUMN max_segment double precision CHECK (max_segment BETWEEN 1 AND 60),
                    ADD COLUMN max_segments integer CHECK (max_segments BETWEEN 1 AND 60),
                    ADD COLUMN aspect text NOT NULL DEFAULT 'source' CHECK (aspect IN ('source', '9:16', '1:1', '4:5', '16:9')),
                    ADD COLUMN poster_key text,
                    ADD COLUMN thumbnails_key text,
                    ADD COLUMN source_media jsonb CHECK (jsonb_typeof(source_media) = 'object')
                """,
                "COMMENT ON COLUMN jobs.min_segment IS 'The shortest segment the user allowed, in seconds; NULL: the engine chooses.'",
                "COMMENT ON COLUMN jobs.max_segment IS 'The longest segment the user allowed, in seconds; NULL: the engine chooses.'",
                "COMMENT ON COLUMN jobs.max_segments IS 'The most segments the user allowed; NULL: the engine chooses.'",
                "COMMENT ON COLUMN jobs.aspect IS 'The shape of the highlight''s frame: source, or a crop (9:16, 1:1, 4:5, 16:9) that follows the action.'",
                "COMMENT ON COLUMN jobs.poster_key IS 'The completed highlight''s poster JPEG in object storage.'",
                "COMMENT ON COLUMN jobs.thumbnails_key IS 'The completed highlight''s thumbnail strip JPEG (one picture per segment) in object storage.'",
                "COMMENT ON COLUMN jobs.source_media IS 'What the worker found the source to be, for timeline exports: frame_rate, start_timecode, has_audio, width and height as displayed.'",
            ]),
        Migration(
            version: 12, name: "attempt diagnostics",
            statements: [
                "ALTER TABLE job_events ADD COLUMN diagnostics text",
                "COMMENT ON COLUMN job_events.diagnostics IS 'For operators, never shown to the app: how a failed attempt''s engine process ended (its signal, or its memory limit) and the last lines of its standard error.'",
            ]),
        Migration(
            version: 13, name: "queue pause",
            statements: [
                """
                CREATE TABLE queue_control (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    paused boolean NOT NULL DEFAULT false,
                    changed_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                "INSERT INTO queue_control DEFAULT VALUES",
                "COMMENT ON TABLE queue_control IS 'Whether the queue is paused (workers take no new jobs): the truth, which Redis only caches; a Redis that restarted empty gets it back from here.'",
            ]),
        // Jobs made before this kept their source's frame rate, so they read as 'source'; new ones
        // are given their choice (30 unless asked).
        Migration(
            version: 14, name: "frame rate choice",
            statements: [
                "ALTER TABLE jobs ADD COLUMN fps text NOT NULL DEFAULT 'source' CHECK (fps IN ('30', 'source'))",
                "ALTER TABLE jobs ALTER COLUMN fps SET DEFAULT '30'",
                "COMMENT ON COLUMN jobs.fps IS 'The highlight''s frame rate: 30 (a faster source shows every second picture, or every third or fourth) or source (its own).'",
            ]),
        Migration(
            version: 15, name: "original quality",
            statements: [
                "ALTER TABLE jobs DROP CONSTRAINT jobs_quality_check",
                "ALTER TABLE jobs ADD CONSTRAINT jobs_quality_check CHECK (quality IN ('high', 'medium', 'low', 'original'))",
                "COMMENT ON COLUMN jobs.quality IS 'The highlight''s size: high (long side up to 1920 px), medium (1280), low (854) or original (the source''s size, frame rate and HDR; copied where it can be).'",
            ]),
        Migration(
            version: 16, name: "music library",
            statements: [
                """
                CREATE TABLE music_tracks (
                    id         uuid PRIMARY KEY,
                    title      text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
                    artist     text CHECK (length(artist) <= 200),
                    license    text CHECK (length(license) <= 2000),
                    object_key text NOT NULL,
                    duration   double precision NOT NULL CHECK (duration > 0),
                    tempo      double precision,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    removed_at timestamptz
                )
                """,
                "COMMENT ON TABLE music_tracks IS 'The operator''s music library (moments music add|remove): tracks a highlight may be cut to. The track and its analysis (beats, bars, loud sections; JSON) are in object storage under music/<id>/. A removed track keeps its row (jobs name it) and loses its objects.'",
                "COMMENT ON COLUMN music_tracks.tempo IS 'Beats a minute; NULL where the track has no steady beat (its cuts go on strong onsets).'",
                "CREATE INDEX music_tracks_listed ON music_tracks (title, id) WHERE removed_at IS NULL",
                """
                ALTER TABLE jobs
                    ADD COLUMN music_id uuid REFERENCES music_tracks (id),
                    ADD COLUMN music_key text,
                    ADD COLUMN music_filename text CHECK (length(music_filename) <= 200),
                    ADD COLUMN music_volume double precision CHECK (music_volume BETWEEN -30 AND 12),
                    ADD COLUMN keep_source_audio boolean NOT NULL DEFAULT true
                """,
                "COMMENT ON COLUMN jobs.music_id IS 'The library track under the highlight; NULL: an uploaded track (music_key) or the video''s own sound only.'",
                "COMMENT ON COLUMN jobs.music_key IS 'A track the app uploaded with the video (the upload''s music part), in object storage under music-uploads/<job>/; deleted with the source.'",
                "COMMENT ON COLUMN jobs.music_filename IS 'The uploaded track''s file name as the app sent it (cleaned), for people to recognise it.'",
                "COMMENT ON COLUMN jobs.music_volume IS 'The music''s loudness against the video''s sound, in dB (-6: 6 dB under it).'",
                "COMMENT ON COLUMN jobs.keep_source_audio IS 'With music: false leaves the video''s own sound out.'",
            ]),
        Migration(
            version: 17, name: "job metadata",
            statements: [
                "ALTER TABLE jobs ADD COLUMN metadata jsonb CHECK (jsonb_typeof(metadata) = 'object')",
                "COMMENT ON COLUMN jobs.metadata IS 'The app''s own strings for the job (the upload''s metadata, at most 1 KB as JSON), returned wherever the job is shown; NULL when none were sent. Query with metadata->>''key''.'",
            ]),
        Migration(
            version: 18, name: "erasure",
            statements: [
                "ALTER TABLE jobs ADD COLUMN erased_at timestamptz",
                "COMMENT ON COLUMN jobs.erased_at IS 'When the job''s owner erased it (DELETE /api/v1/jobs/{id}/files or /api/v1/devices/me): its files are deleted (result_expired_at says when they were gone), its file name, metadata and segments cleared; the row stays for the month''s count and the audit. Downloads answer 410 erased.'",
                "ALTER TABLE devices ADD COLUMN erased_at timestamptz",
                "COMMENT ON COLUMN devices.erased_at IS 'When the device erased itself and everything of it (DELETE /api/v1/devices/me): its token is revoked and its name cleared; the token may only repeat that request.'",
                "ALTER TABLE admin_operations DROP CONSTRAINT admin_operations_action_check",
                "ALTER TABLE admin_operations ADD CONSTRAINT admin_operations_action_check CHECK (action IN ('retry', 'cancel', 'delete', 'pause', 'resume', 'redeliver', 'erase', 'erase_device'))",
                "COMMENT ON COLUMN admin_operations.actor IS 'Who: console:<name>, cli:<user>@<host>, or device:<id> for what an app asked for itself (erase, erase_device).'",
            ]),
        Migration(
            version: 19, name: "webhook endpoints",
            statements: [
                """
                CREATE TABLE webhook_endpoints (
                    id                    uuid PRIMARY KEY,
                    url                   text NOT NULL CHECK (length(url) <= 2000),
                    secret                text NOT NULL,
                    previous_secret       text,
                    previous_secret_until timestamptz,
                    description           text CHECK (length(description) <= 200),
                    created_at            timestamptz NOT NULL DEFAULT now(),
                    rotated_at            timestamptz,
                    removed_at            timestamptz
                )
                """,
                "COMMENT ON TABLE webhook_endpoints IS 'Where the operator wants every job''s end announced (moments webhooks endpoints add|list|remove|rotate|ping, or the console): each gets a signed POST per job end, beside a job''s own callback_url, signed with its own secret.'",
                "COMMENT ON COLUMN webhook_endpoints.previous_secret IS 'After a rotation, the secret before: deliveries are signed with both until previous_secret_until, so receivers can switch without missing one.'",
                "ALTER TABLE webhook_deliveries ADD COLUMN endpoint_id uuid REFERENCES webhook_endpoints (id), ALTER COLUMN job_id DROP NOT NULL",
                "COMMENT ON COLUMN webhook_deliveries.endpoint_id IS 'The operator''s endpoint this delivery goes to (signed with its secret); NULL: the job''s callback_url (signed with WEBHOOK_SECRET). A ping has an endpoint and no job.'",
                """
                CREATE OR REPLACE FUNCTION moments_queue_webhook() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.callback_url IS NOT NULL THEN
                        INSERT INTO webhook_deliveries (job_id, url, event) VALUES (NEW.id, NEW.callback_url, 'job.' || NEW.status);
                    END IF;
                    INSERT INTO webhook_deliveries (job_id, url, event, endpoint_id)
                    SELECT NEW.id, e.url, 'job.' || NEW.status, e.id FROM webhook_endpoints e WHERE e.removed_at IS NULL;
                    RETURN NEW;
                END
                $$
                """,
                "DROP TRIGGER jobs_queue_webhook ON jobs",
                """
                CREATE TRIGGER jobs_queue_webhook AFTER UPDATE OF status ON jobs FOR EACH ROW
                WHEN (NEW.status IN ('completed', 'failed', 'cancelled') AND OLD.status IS DISTINCT FROM NEW.status)
                EXECUTE FUNCTION moments_queue_webhook()
                """,
            ]),
        Migration(
            version: 20, name: "push notifications",
            statements: [
                """
                CREATE TABLE push_tokens (
                    device_id   uuid PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
                    token       text NOT NULL CHECK (token ~ '^[0-9a-f]{64,200}$'),
                    environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
                    updated_at  timestamptz NOT NULL DEFAULT now()
                )
                """,
                "COMMENT ON TABLE push_tokens IS 'The APNs device token each device registered (PUT /api/v1/devices/me/push): its jobs'' ends are pushed there. Removed by DELETE, by the device''s erasure, or when APNs says the token is no longer valid.'",
                """
                CREATE TABLE push_deliveries (
                    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    job_id          uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
                    device_id       uuid NOT NULL,
                    token           text NOT NULL,
                    environment     text NOT NULL,
                    event           text NOT NULL,
                    created_at      timestamptz NOT NULL DEFAULT now(),
                    next_attempt_at timestamptz NOT NULL DEFAULT now(),
                    attempts        integer NOT NULL DEFAULT 0,
                    last_attempt_at timestamptz,
                    last_status     integer,
                    last_reason     text,
                    delivered_at    timestamptz,
                    gave_up_at      timestamptz
                )
                """,
                "COMMENT ON TABLE push_deliveries IS 'One push to send per job end of a device with a push token, written by a trigger in the statement that ends the job (the outbox, as webhook_deliveries); last_reason is APNs'' own (Unregistered, BadDeviceToken, TooManyRequests, ...).'",
                "CREATE INDEX push_deliveries_due ON push_deliveries (next_attempt_at) WHERE delivered_at IS NULL AND gave_up_at IS NULL",
                "CREATE INDEX push_deliveries_job ON push_deliveries (job_id)",
                """
                CREATE FUNCTION moments_queue_push() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO push_deliveries (job_id, device_id, token, environment, event)
                    SELECT NEW.id, p.device_id, p.token, p.environment, 'job.' || NEW.status
                    FROM push_tokens p WHERE p.device_id = NEW.owner::uuid;
                    RETURN NEW;
                END
                $$
                """,
                """
                CREATE TRIGGER jobs_queue_push AFTER UPDATE OF status ON jobs FOR EACH ROW
                WHEN (NEW.status IN ('completed', 'failed') AND OLD.status IS DISTINCT FROM NEW.status
                      AND NEW.owner ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
                EXECUTE FUNCTION moments_queue_push()
                """,
            ]),
    ]
}

/// Jobs finished per hour or day, by outcome, with the median and 95th percentile processing time
/// (start of the first attempt to the end) of the completed ones. Migration 2's text, never edited.
private func throughputView(per unit: String) -> String {
    """
    CREATE VIEW admin_throughput_\(unit == "hour" ? "hourly" : "daily") AS
    SELECT date_trunc('\(unit)', completed_at) AS \(unit),
           count(*) FILTER (WHERE status = 'completed') AS completed,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started_at))
               FILTER (WHERE status = 'completed') AS p50_seconds,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started_at))
               FILTER (WHERE status = 'completed') AS p95_seconds
    FROM jobs WHERE completed_at IS NOT NULL
    GROUP BY 1
    """
}

extension JobStore {
    /// Applies every migration this database lacks, in order, in one transaction under an advisory
    /// lock: concurrent callers wait, then find nothing left to do. Returns the versions applied now.
    /// It gets two minutes, or the store's `callTimeout` where that is longer (a test's store that
    /// only watches a system of processes, whose calls may wait for a busy test process's threads).
    @discardableResult
    public func migrate() async throws(JobStoreError) -> [Int] {
        try await database("migrate", timeout: max(.seconds(120), callTimeout)) { connection, logger in
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Migrations.advisoryLockKey))", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version    integer PRIMARY KEY,
                        name       text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )
                    """, logger: logger)
                var applied = Set<Int>()
                for try await version in try await connection.query("SELECT version FROM schema_migrations", logger: logger).decode(Int.self) {
                    applied.insert(version)
                }
                var now: [Int] = []
                for migration in Migrations.all where !applied.contains(migration.version) {
                    for statement in migration.statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                        logger: logger)
                    now.append(migration.version)
                }
                if !now.isEmpty { logger.info("schema migrated", metadata: ["versions": "\(now)"]) }
                return now
            }
        }
    }

    /// The versions recorded in `schema_migrations`, ascending.
    public func appliedMigrations() async throws(JobStoreError) -> [Int] {
        try await database("read migrations") { connection, logger in
            var versions: [Int] = []
            let rows = try await connection.query("SELECT version FROM schema_migrations ORDER BY version", logger: logger)
            for try await version in rows.decode(Int.self) { versions.append(version) }
            return versions
        }
    }
}
