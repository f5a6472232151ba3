-- wrk script: POST /plants with a unique id on every request and a bearer token.
-- Arguments: TOKEN ID_BASE CONNECTIONS (wrk's -c) WARMUP_SECONDS [RATE]. Prints one JSON line of results when
-- done.
--
-- The first WARMUP_SECONDS warm the server up on the run's own connections; only requests sent
-- after them are measured. A warm-up run of its own would close its connections, and the
-- measurement would start by opening CONNECTIONS new ones on a busy server: their first answers
-- wait for the server to accept them (up to 0.4 s on Node.js 20, bench/connection-burst.ts), and
-- wrk's coordinated-omission correction (stats_correct in wrk.c) adds a made-up sample for every
-- mean latency each of those waits spans, about 50 for each, enough to become the p99.
--
-- wrk's own latency statistics cannot leave the warm-up out, so the script times each request
-- itself: from request() to response(), found by its X-Request-Id, which the service and
-- bench/baseline-server.mjs echo. The percentiles are wrk's: the same correction, over the measured
-- requests, then the same rank.
--
-- With RATE, each thread's requests are paced to RATE a second over all its connections (see
-- delay below); the benchmark runs one thread.
local counter = 0
local threads = {}
local token, base, measure_from

-- The run's shape and what each thread measured, read by done() through thread:get (done() runs
-- in a state of its own, where init() did not).
run_connections = 0
run_warmup_seconds = 0
latencies = {}
measured = 0
non2xx = 0
untimed = 0

-- Send times of the requests in flight, by counter modulo SLOTS: a connection has one request in
-- flight at a time, so far fewer than SLOTS are.
local SLOTS = 65536
local sent = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_index", #threads)
end

-- wrk's Lua has no wall clock finer than a second; LuaJIT's ffi reads the monotonic one.
local function monotonic_ms()
  local ffi = require("ffi")
  ffi.cdef[[
    typedef struct { long tv_sec; long tv_nsec; } plantstore_timespec;
    int clock_gettime(int clock_id, plantstore_timespec *time);
  ]]
  local time = ffi.new("plantstore_timespec")
  local CLOCK_MONOTONIC = 1
  return function()
    ffi.C.clock_gettime(CLOCK_MONOTONIC, time)
    return tonumber(time.tv_sec) * 1000 + tonumber(time.tv_nsec) / 1e6
  end
end
local clock = monotonic_ms()

function init(args)
  token = args[1]
  -- Each thread counts in its own range of 2^32 ids.
  base = tonumber(args[2]) + thread_index * 4294967296
  run_connections = tonumber(args[3])
  run_warmup_seconds = tonumber(args[4])
  measure_from = clock() + run_warmup_seconds * 1000
  local rate = tonumber(args[5])
  if rate ~= nil then
    -- wrk asks delay() before every request of a connection. Each request takes the next slot of a
    -- fixed schedule (one every 1/RATE s from the first), so the rate does not drift with the
    -- answers' latency, and a connection that fell behind catches up at once. wrk calls delay()
    -- only when the script defines it: without RATE, nothing waits.
    local interval = 1000 / rate
    local next_slot
    function delay()
      local at = clock()
      next_slot = next_slot or at
      local wait = next_slot - at
      next_slot = next_slot + interval
      return wait > 0 and wait or 0
    end
  end
end

function request()
  counter = counter + 1
  local id = base + counter
  sent[counter % SLOTS] = clock()
  return wrk.format("POST", "/plants", {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
    ["X-Request-Id"] = string.format("%d", id),
  }, string.format('{"id":%d,"name":"Monstera deliciosa","tag":"aroid"}', id))
end

function response(status, headers)
  local now = clock()
  local echoed = tonumber(headers["x-request-id"] or headers["X-Request-Id"])
  if echoed == nil then
    -- Not timed, so not measured: done() reports it as an error.
    untimed = untimed + 1
    return
  end
  local slot = (echoed - base) % SLOTS
  local at = sent[slot]
  sent[slot] = nil
  if at == nil or at < measure_from then return end
  local us = math.floor((now - at) * 1000)
  latencies[us] = (latencies[us] or 0) + 1
  measured = measured + 1
  if status > 399 then non2xx = non2xx + 1 end
end

-- wrk's stats_correct: for a latency of at least twice the expected interval, the requests a
-- connection would have sent meanwhile are counted too, one each interval shorter.
local function correct(counts, total, interval)
  local long = {}
  for us, count in pairs(counts) do
    if us >= 2 * interval then long[#long + 1] = us end
  end
  table.sort(long)
  for _, us in ipairs(long) do
    local count = counts[us]
    local m = us - interval
    while m > interval do
      counts[m] = (counts[m] or 0) + count
      total = total + count
      m = m - interval
    end
  end
  return total
end

-- wrk's stats_percentile.
local function percentile(sorted, counts, total, p)
  local rank = math.floor(p / 100 * total + 0.5 + 0.5)
  local seen = 0
  for _, us in ipairs(sorted) do
    seen = seen + counts[us]
    if seen >= rank then return us end
  end
  return 0
end

function done(summary, latency, requests)
  local counts, total, errors, status = {}, 0, 0, 0
  local connections = threads[1]:get("run_connections")
  for _, thread in ipairs(threads) do
    for us, count in pairs(thread:get("latencies")) do counts[us] = (counts[us] or 0) + count end
    total = total + thread:get("measured")
    status = status + thread:get("non2xx")
    errors = errors + thread:get("untimed")
  end
  local seconds = summary.duration / 1e6 - threads[1]:get("run_warmup_seconds")
  local requests_measured = total
  if total > 0 and math.floor(total / connections) > 0 then
    total = correct(counts, total, math.floor(seconds * 1e6 / math.floor(total / connections)))
  end
  local sorted = {}
  for us in pairs(counts) do sorted[#sorted + 1] = us end
  table.sort(sorted)
  io.write(string.format(
    'RESULT {"requests":%d,"seconds":%f,"p50_us":%d,"p99_us":%d,"errors":%d,"non2xx":%d}\n',
    requests_measured, seconds, percentile(sorted, counts, total, 50), percentile(sorted, counts, total, 99),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout + errors,
    status))
end
