-- wrk script: POST /plants with a unique id on every request and a bearer token.
-- Arguments: TOKEN ID_BASE [RATE]. Prints one JSON line of results when done.
-- With RATE, each thread's requests are paced to RATE a second over all its connections (see
-- delay below); the benchmark runs one thread.
local counter = 0
local threads = 0
local token, base

function setup(thread)
  threads = threads + 1
  thread:set("thread_index", threads)
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

function init(args)
  token = args[1]
  -- Each thread counts in its own range of 2^32 ids.
  base = tonumber(args[2]) + thread_index * 4294967296
  local rate = tonumber(args[3])
  if rate ~= nil then
    -- wrk asks delay() before every request of a connection. Each request takes the next slot of a
    -- fixed schedule (one every 1/RATE s from the first), so the rate does not drift with the
    -- answers' latency, and a connection that fell behind catches up at once. wrk calls delay()
    -- only when the script defines it: without RATE, nothing waits.
    local clock = monotonic_ms()
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
  local body = string.format('{"id":%d,"name":"Monstera deliciosa","tag":"aroid"}', base + counter)
  return wrk.format("POST", "/plants", {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
  }, body)
end

function done(summary, latency, requests)
  io.write(string.format(
    'RESULT {"requests":%d,"seconds":%f,"p50_us":%d,"p99_us":%d,"errors":%d,"non2xx":%d}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50), latency:percentile(99),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
