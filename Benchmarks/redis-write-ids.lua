-- wrk script of Benchmarks/redis-write-ids.sh (issue 51, item 4). Pass it as a file (-s FILE): wrk
-- reads the script once per thread.
--   wrk -tN -cN -d600s -s Benchmarks/redis-write-ids.lua URL -- COUNT PREFIX [keyed] [TAG]
-- Each wrk thread is one writer on one keep-alive connection and one feed, PREFIX<k> (k = 1..N): it
-- sends COUNT PUTs, each a version (the section's model counts), then stops. With `keyed`, each PUT
-- carries an Idempotency-Key of its own (TAG-w<k>-<n>), as a client that sends one with every write.
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("writer", counter)
end

function init(args)
    count = tonumber(args[1])
    prefix = args[2]
    keyed = args[3] == "keyed"
    tag = args[4] or "run"
    n = 0
    done = 0
end

function request()
    n = n + 1
    local body = string.format('{"sections":[{"id":"s","model":{"writer":%d,"n":%d},"items":[{"id":"a","kind":"row","model":{"text":"a short row"}}]}]}', writer, n)
    local headers = {["Content-Type"] = "application/json"}
    if keyed then headers["Idempotency-Key"] = string.format("%s-w%d-%d", tag, writer, n) end
    return wrk.format("PUT", prefix .. writer, headers, body)
end

function response(status, headers, body)
    done = done + 1
    if done >= count then wrk.thread:stop() end
end
