-- wrk script: POST the AdmissionReview of admission-review.json (beside this
-- file) to the path given on wrk's command line, as the apiserver would.
-- Cross-check of webhook_load's maximum rate (bench/webhook_latency.py):
--
--   wrk -t2 -c16 -d10s --latency -s bench/webhook/admission.lua https://127.0.0.1:PORT/mutate
--
-- Caveats, read them before quoting wrk's figures:
--   * wrk verifies nothing about TLS: no certificate chain, no host name. It
--     measures the same handshake and record costs, not a checked connection.
--     webhook_load verifies against the CA (--cacert), as the apiserver does.
--   * wrk is closed-loop: a connection sends its next request only when the
--     last one came back, so a stall delays the load instead of piling
--     requests up behind it, and its latency percentiles understate the tail
--     ("coordinated omission"). Quote its Requests/sec as a throughput
--     ceiling, and webhook_load's latencies (from schedule) as latencies.
--   * wrk counts only non-2xx/3xx responses and socket errors; it does not
--     look at the AdmissionReview that comes back.
--
-- The body file can be named with ADMISSION_BODY=path in the environment.

local function script_dir()
	local source = debug.getinfo(1, "S").source
	return source:match("^@(.*/)") or "./"
end

local function read_file(path)
	local file, err = io.open(path, "rb")
	if not file then
		error("admission.lua: cannot read " .. path .. ": " .. tostring(err))
	end
	local data = file:read("*a")
	file:close()
	return data
end

wrk.method = "POST"
wrk.body = read_file(os.getenv("ADMISSION_BODY") or (script_dir() .. "admission-review.json"))
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, */*"
