-- wrk script: POST /plants with a unique id on every request and a bearer token.
-- Arguments: TOKEN ID_BASE. Prints one JSON line of results when done.
local counter = 0
local threads = 0
local token, base

function setup(thread)
  threads = threads + 1
  thread:set("thread_index", threads)
end

function init(args)
  token = args[1]
  -- Each thread counts in its own range of 2^32 ids.
  base = tonumber(args[2]) + thread_index * 4294967296
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
