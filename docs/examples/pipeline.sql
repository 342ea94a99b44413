-- A lakehouse pipeline kept fresh by flightd (README: "A pipeline of
-- materialized tables"). Changes of the source system land in the ODS
-- tables through bulk ingest with a _row_kind column (CDC); each layer
-- above is a materialized table that flightd keeps within its freshness.
-- cmd/flightd/pipeline_test.go runs this file against a real flightd.

-- ODS: copies of the source system's tables, written by CDC.
CREATE TABLE customers (cust_id BIGINT NOT NULL, region STRING, PRIMARY KEY (cust_id) NOT ENFORCED);
CREATE TABLE orders_ods (id BIGINT NOT NULL, cust_id BIGINT, amount INT, ds STRING, PRIMARY KEY (id) NOT ENFORCED);

-- DWD: each order with its customer's region, kept by a continuous job
-- (a freshness under 30 minutes); its key is the orders' id.
CREATE MATERIALIZED TABLE dwd_orders FRESHNESS = INTERVAL '5' SECOND AS
  SELECT o.id, o.ds, o.amount, c.region FROM orders_ods AS o JOIN customers AS c ON o.cust_id = c.cust_id;

-- DWS: totals per day and region, continuously from the DWD table.
CREATE MATERIALIZED TABLE dws_region_day FRESHNESS = INTERVAL '5' SECOND AS
  SELECT ds, region, sum(amount) AS total, count(*) AS orders FROM dwd_orders GROUP BY ds, region;

-- ADS: the two best regions of each day, recomputed every 10 seconds.
CREATE MATERIALIZED TABLE ads_top_regions FRESHNESS = INTERVAL '10' SECOND REFRESH_MODE = FULL AS
  SELECT ds, region, total FROM (
    SELECT ds, region, total, ROW_NUMBER() OVER (PARTITION BY ds ORDER BY total DESC, region) AS rn FROM dws_region_day
  ) AS ranked WHERE rn <= 2;
