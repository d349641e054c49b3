-- wrk script for benchmarks/_loadgen.py: POST one fixed body, check every answer, report JSON.
-- Arguments (after `--`): body file, content type, check kind ("label" | "triton-logits"),
-- expected label.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local check_kind, expected

function init(args)
  local file = assert(io.open(args[1], "rb"))
  wrk.method = "POST"
  wrk.body = file:read("*a")
  file:close()
  wrk.headers["Content-Type"] = args[2]
  check_kind = args[3]
  expected = tonumber(args[4])
  right = 0
  wrong = 0
end

local function label_of(body)
  if check_kind == "label" then
    return tonumber(body:match('"label"%s*:%s*(%d+)'))
  end
  -- Triton's KServe v2 JSON: the first output's "data" holds the logits; the label is the argmax.
  local data = body:match('"data"%s*:%s*%[([^%]]*)%]')
  if not data then return nil end
  local best, best_index, index = nil, nil, 0
  for number in data:gmatch("[^,%s]+") do
    local value = tonumber(number)
    if value and (best == nil or value > best) then best, best_index = value, index end
    index = index + 1
  end
  return best_index
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    if label_of(body) == expected then right = right + 1 else wrong = wrong + 1 end
  end
end

function done(summary, latency, requests)
  local right_total, wrong_total = 0, 0
  for _, thread in ipairs(threads) do
    right_total = right_total + thread:get("right")
    wrong_total = wrong_total + thread:get("wrong")
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"duration_us":%d,"errors_connect":%d,"errors_read":%d,' ..
    '"errors_write":%d,"errors_timeout":%d,"errors_status":%d,"right":%d,"wrong":%d,' ..
    '"p50_us":%d,"p95_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    right_total, wrong_total, latency:percentile(50), latency:percentile(95),
    latency:percentile(99), latency.max, latency.mean))
end
