-- +goose Up
-- Booking: services, the project's booking settings (one row, written on
-- the first PATCH; defaults live in code until then) and bookings.
CREATE TABLE booking_settings (
    singleton          boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    timezone           text,               -- NULL: follow the project's timezone
    weekly_hours       jsonb NOT NULL,
    auto_confirm       boolean NOT NULL,
    min_notice_minutes integer NOT NULL,
    max_days_ahead     integer NOT NULL,
    updated_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE booking_services (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL,
    description      text NOT NULL DEFAULT '',
    duration_minutes integer NOT NULL CHECK (duration_minutes > 0),
    buffer_minutes   integer NOT NULL DEFAULT 0 CHECK (buffer_minutes >= 0),
    price            bigint NOT NULL DEFAULT 0 CHECK (price >= 0),
    currency         text NOT NULL,
    is_active        boolean NOT NULL DEFAULT true,
    deleted_at       timestamptz,         -- deleted services keep their bookings
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- blocked_until is end_at plus the service's buffer at booking time. The
-- exclusion constraint is what guarantees that two bookings of a service
-- never overlap, whatever the concurrency: a concurrent insert of an
-- overlapping range waits for the first and then fails with 23P01.
-- Completed bookings keep their time; cancelled ones release it.
CREATE TABLE bookings (
    id             bigserial PRIMARY KEY,
    service_id     bigint NOT NULL REFERENCES booking_services (id),
    start_at       timestamptz NOT NULL,
    end_at         timestamptz NOT NULL,
    blocked_until  timestamptz NOT NULL,
    status         text NOT NULL CHECK (status IN ('pending','confirmed','cancelled','completed')),
    customer_name  text NOT NULL,
    customer_email text NOT NULL,
    customer_phone text,
    notes          text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (start_at < end_at AND end_at <= blocked_until),
    CONSTRAINT bookings_no_overlap EXCLUDE USING gist (
        service_id WITH =,
        tstzrange(start_at, blocked_until, '[)') WITH &&
    ) WHERE (status IN ('pending','confirmed','completed'))
);
