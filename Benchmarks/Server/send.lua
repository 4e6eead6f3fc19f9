-- wrk script: POST /v1/rooms/{room}/messages as many users at once.
--
--   wrk -t2 -c256 -d15s --latency -s send.lua http://127.0.0.1:PORT -- users.tsv 2
--
-- users.tsv has one `user<TAB>room<TAB>token` line per user (harness.py seed writes it); the second
-- argument is the thread count (-t), which wrk does not tell a thread. Thread i takes every line whose
-- index is i modulo the thread count and hands its users out in turn, one per request. wrk asks a thread
-- for a request when one of its connections is free, so with as many users as connections each
-- connection in effect sends as its own user in that user's room, one request in flight each.

local threads = {}

function setup(thread)
    thread:set("id", #threads)
    table.insert(threads, thread)
end

local requests = {}
local next_request = 0
non2xx = 0
first_error = nil

function init(args)
    local path, thread_count = args[1], tonumber(args[2] or "1")
    local index = 0
    for line in io.lines(path) do
        local user, room, token = line:match("^(%S+)\t(%S+)\t(%S+)$")
        if user and index % thread_count == id then
            local body = '{"body":"wrk from ' .. user .. '"}'
            table.insert(requests, wrk.format("POST", "/v1/rooms/" .. room .. "/messages", {
                ["Authorization"] = "Bearer " .. token,
                ["Content-Type"] = "application/json",
            }, body))
        end
        index = index + 1
    end
    if #requests == 0 then
        error("send.lua: thread " .. id .. " has no users from " .. tostring(path))
    end
end

function request()
    next_request = next_request % #requests + 1
    return requests[next_request]
end

function response(status, headers, body)
    if status < 200 or status > 299 then
        non2xx = non2xx + 1
        if not first_error then
            first_error = status .. " " .. body
        end
    end
end

function done(summary, latency, _)
    local seconds = summary.duration / 1e6
    local failed = 0
    local sample = nil
    for _, thread in ipairs(threads) do
        failed = failed + thread:get("non2xx")
        sample = sample or thread:get("first_error")
    end
    local errors = summary.errors
    io.write("\n---- send.lua summary ----\n")
    io.write(string.format("requests:        %d in %.1f s\n", summary.requests, seconds))
    io.write(string.format("requests/s:      %.0f\n", summary.requests / seconds))
    io.write(string.format("2xx/s:           %.0f\n", (summary.requests - failed) / seconds))
    for _, p in ipairs({ 50, 90, 99, 99.9 }) do
        io.write(string.format("latency p%-5s   %.2f ms\n", p, latency:percentile(p) / 1000))
    end
    io.write(string.format("latency max      %.2f ms\n", latency.max / 1000))
    io.write(string.format("non-2xx:         %d\n", failed))
    io.write(string.format("socket errors:   connect %d, read %d, write %d, timeout %d\n",
        errors.connect, errors.read, errors.write, errors.timeout))
    if sample then
        io.write("first non-2xx:   " .. sample .. "\n")
    end
end
