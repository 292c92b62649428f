-- +goose Up
-- Commerce: product categories (a tree), products, variants, orders, the
-- connected payment account and the processor events already applied.
-- Lean on purpose (every project schema gets these): few relations, no
-- index that only a rare lookup would use.
--
-- Stock: reserved counts units held by pending checkouts. The checks keep
-- reserved <= stock_quantity, so tracked stock is never oversold whatever
-- the concurrency: a reservation is one conditional UPDATE.
CREATE TABLE product_categories (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL,
    slug        text NOT NULL UNIQUE,
    description text NOT NULL DEFAULT '',
    image       text NOT NULL DEFAULT '',
    parent_id   bigint REFERENCES product_categories(id) ON DELETE SET NULL,
    sort_order  integer NOT NULL DEFAULT 0,
    is_active   boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE products (
    id                bigserial PRIMARY KEY,
    name              text NOT NULL,
    slug              text NOT NULL UNIQUE,
    price             bigint NOT NULL CHECK (price >= 0),
    currency          text NOT NULL,
    status            text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft','active','archived')),
    description       text NOT NULL DEFAULT '',
    short_description text NOT NULL DEFAULT '',
    compare_at_price  bigint,
    type              text NOT NULL DEFAULT 'physical' CHECK (type IN ('physical','digital','service')),
    sku               text NOT NULL DEFAULT '',
    stock_quantity    integer NOT NULL DEFAULT 0,
    reserved          integer NOT NULL DEFAULT 0,
    track_inventory   boolean NOT NULL DEFAULT false,
    weight            double precision,
    images            jsonb NOT NULL DEFAULT '[]',
    metadata          jsonb NOT NULL DEFAULT '{}',
    category_id       bigint REFERENCES product_categories(id) ON DELETE SET NULL,
    featured          boolean NOT NULL DEFAULT false,
    published_at      timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT products_stock CHECK (reserved >= 0 AND stock_quantity >= reserved)
);

CREATE TABLE product_variants (
    id             bigserial PRIMARY KEY,
    product_id     bigint NOT NULL REFERENCES products(id) ON DELETE CASCADE,
    name           text NOT NULL,
    price          bigint NOT NULL CHECK (price >= 0),
    sku            text NOT NULL DEFAULT '',
    stock_quantity integer NOT NULL DEFAULT 0,
    reserved       integer NOT NULL DEFAULT 0,
    options        jsonb NOT NULL DEFAULT '{}',
    sort_order     integer NOT NULL DEFAULT 0,
    is_active      boolean NOT NULL DEFAULT true,
    CONSTRAINT product_variants_stock CHECK (reserved >= 0 AND stock_quantity >= reserved)
);
CREATE INDEX product_variants_product ON product_variants (product_id);

-- items is the frozen list of lines (names, prices and whether each line
-- holds tracked stock); reserved tells whether the order still holds its
-- reservation. refunds maps each refund id to its amount; refunded_amount
-- is the greater of their sum and the processor's running total on the
-- charge (charge_refunded).
CREATE TABLE orders (
    id                 bigserial PRIMARY KEY,
    status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','paid','processing','delivered','cancelled')),
    payment_status     text NOT NULL DEFAULT 'unpaid' CHECK (payment_status IN ('unpaid','paid','partially_refunded','refunded')),
    items              jsonb NOT NULL,
    subtotal           bigint NOT NULL,
    total              bigint NOT NULL,
    refunded_amount    bigint NOT NULL DEFAULT 0,
    refunds            jsonb NOT NULL DEFAULT '{}',
    charge_refunded    bigint NOT NULL DEFAULT 0,
    currency           text NOT NULL,
    customer_name      text NOT NULL DEFAULT '',
    customer_email     text NOT NULL DEFAULT '',
    source             text NOT NULL CHECK (source IN ('checkout','manual')),
    reserved           boolean NOT NULL DEFAULT false,
    payment_session_id text,
    payment_intent_id  text,
    expires_at         timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- The project's connected account at the processor (one row at most).
CREATE TABLE payment_account (
    id                boolean PRIMARY KEY DEFAULT true CHECK (id),
    account_id        text,
    charges_enabled   boolean NOT NULL DEFAULT false,
    payouts_enabled   boolean NOT NULL DEFAULT false,
    details_submitted boolean NOT NULL DEFAULT false,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- Processor events applied, so a repeated event changes nothing.
CREATE TABLE payment_events (
    id         text PRIMARY KEY,
    type       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
