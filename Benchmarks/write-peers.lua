-- wrk script of Benchmarks/write-peers.sh (issue 39). Pass it as a file (-s FILE): wrk reads the script
-- once per thread, so a pipe or <(...) gives every thread but the first an empty script.
--   wrk -tN -cN -d5s -s Benchmarks/write-peers.lua URL -- MODE [METHOD PREFIX [marker|- [RATE]]]
-- Each wrk thread is one writer on one keep-alive connection (run with -t N -c N).
--   snapshot PUT  PREFIX: PUT  PREFIX<k> (k = 1..N, one feed per writer), the snapshot body below
--   snapshot POST PREFIX: POST PREFIX<k> (nchan's publisher: one channel per writer), the SAME bytes
--   action:   POST /feeds/todo/actions/rename {"id":"t<1..10>","title":"w<k> n<n>"}: one item changes
--   action PREFIX: the same action on PREFIX<k>, one feed per writer (/feeds/todo.w: the members of the todo
--             family of Benchmarks/Sources/action-host)
--   patch:    PATCH /feeds/home {"banner":{"id":"bench","title":"w<k> n<n>"}}: one item changes
--   patch PREFIX: the same PATCH to PREFIX<k>, one feed per writer (/feeds/home.w: the home family's members)
-- The snapshot: 10 items, 1,534 to 1,553 bytes, in DiffStream's wire format ({"sections":[…]}). Ten
-- bodies are prepared at start and sent in turn; going from one to the next changes exactly two items (step j
-- flips items j mod 5 + 1 and j mod 5 + 6, so ten steps come back to the first body), so no PUT is a
-- no-op and every request of a writer makes a new version.
-- With a 4th argument `marker` (SUBSCRIBERS=N), the section's model also carries "at":"@<t>@", t the
-- CLOCK_MONOTONIC time in ns when the request was built, for Benchmarks/write-subscribers.c's fan-out
-- latency; the body is then formatted per request (a third change per PUT: the section's model).
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("writer", counter)
end

local function item(i, flipped)
    local value = flipped and (1000 + i) or i
    return string.format('{"id":"i%d","kind":"card","model":{"title":"Item number %d of the feed","value":%d,"done":%s,"note":"some text to make it realistic, a subtitle"}}',
        i, i, value, flipped and "true" or "false")
end

local function items(flips)
    local list = {}
    for i = 1, 10 do list[i] = item(i, flips[i]) end
    return table.concat(list, ",")
end

function init(args)
    mode = args[1] or "snapshot"
    n = 0
    wrk.headers["Content-Type"] = "application/json"
    if mode == "snapshot" then
        wrk.method = args[2] or "PUT"
        path = (args[3] or "/feeds/bench") .. writer
        marker = args[4] == "marker"
        -- A 5th argument: writes per second per writer (a pause of 1000/rate ms after each answer, wrk's
        -- delay()), for a write rate both servers can deliver; without it, as fast as answers come.
        local rate = tonumber(args[5])
        if rate and rate > 0 then
            pause = 1000 / rate
            function delay() return pause end
        end
        tails = {}
        local flips = {}
        for j = 0, 9 do
            local a = j % 5 + 1
            flips[a] = not flips[a]
            flips[a + 5] = not flips[a + 5]
            tails[j + 1] = '"},"items":[' .. items(flips) .. ']}]}'
        end
        prepared = {}
        for j = 1, 10 do prepared[j] = wrk.format(nil, path, nil, '{"sections":[{"id":"s","model":{"title":"Bench' .. tails[j]) end
        if marker then
            ffi = require("ffi")
            ffi.cdef("typedef struct { long tv_sec; long tv_nsec; } wp_timespec; int clock_gettime(int clock, wp_timespec *t);")
            now = ffi.new("wp_timespec")
        end
    elseif mode == "action" then
        wrk.method = "POST"
        -- With a prefix, each writer on its own feed (PREFIX<k>: 16 members of action-host's todo family).
        path = (args[2] and (args[2] .. writer) or "/feeds/todo") .. "/actions/rename"
    elseif mode == "patch" then
        wrk.method = "PATCH"
        -- With a prefix, each writer on its own feed (PREFIX<k>: 16 members of the home.<user> family).
        path = args[2] and (args[2] .. writer) or "/feeds/home"
    end
end

function request()
    n = n + 1
    if mode == "snapshot" then
        if not marker then return prepared[(n - 1) % 10 + 1] end
        ffi.C.clock_gettime(1, now)  -- CLOCK_MONOTONIC
        return wrk.format(nil, path, nil, string.format('{"sections":[{"id":"s","model":{"title":"Bench","at":"@%d%09d@%s',
            tonumber(now.tv_sec), tonumber(now.tv_nsec), tails[(n - 1) % 10 + 1]))
    end
    if mode == "action" then
        return wrk.format(nil, path, nil, string.format('{"id":"t%d","title":"w%d n%d"}', (n - 1) % 10 + 1, writer, n))
    end
    return wrk.format(nil, path, nil, string.format('{"banner":{"id":"bench","title":"w%d n%d"}}', writer, n))
end

function done(summary, latency, requests)
    local errors = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
    io.write(string.format("RESULT rps=%.1f p50_ms=%.3f p99_ms=%.3f errors=%d requests=%d\n",
        summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors, summary.requests))
end
