-- wrk script: each wrk thread is one writer with its own feed (run with -t N -c N), PUTting a small
-- snapshot of 10 items where one item changes per request: a small feed update (about 1.3 kB).
local counter = 0
local threads = {}

function setup(thread)
    counter = counter + 1
    thread:set("feed", "bench" .. counter)
    table.insert(threads, thread)
end

function init(args)
    n = 0
    wrk.method = "PUT"
    wrk.headers["Content-Type"] = "application/json"
end

function request()
    n = n + 1
    local items = {}
    for i = 1, 10 do
        local value = (i == (n % 10) + 1) and n or i
        items[i] = string.format('{"id":"i%d","kind":"card","model":{"title":"Item number %d of the feed","value":%d,"note":"some text to make it realistic"}}', i, i, value)
    end
    local body = '{"sections":[{"id":"s","model":{"title":"Bench"},"items":[' .. table.concat(items, ",") .. ']}]}'
    return wrk.format(nil, "/feeds/" .. feed, nil, body)
end

function done(summary, latency, requests)
    local errors = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
    io.write(string.format("RESULT rps=%.1f p50_ms=%.3f p99_ms=%.3f errors=%d\n",
        summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors))
end
