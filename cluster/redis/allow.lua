-- Sliding-window rate limiter, run atomically by Redis.
-- KEYS[1]  sorted set of allowed hits: score = hit time in microseconds, member unique
-- ARGV[1]  limit (allowed hits per window)
-- ARGV[2]  window in microseconds
-- ARGV[3]  random suffix making this hit's member unique
-- Returns {allowed (1/0), remaining, retry_after_us}.
--
-- Time comes from Redis's own TIME so every Keyward node shares one clock. Redis 7
-- replicates a script's effects, not the script, so a write after TIME is allowed.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- A hit at h counts while now - h < window: drop those with h <= now - window.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)

if count < limit then
  -- The member is built from TIME's strings, not from now, because Lua would print a
  -- 16-digit number in exponent form.
  redis.call('ZADD', key, now, t[1] .. '.' .. t[2] .. '-' .. ARGV[3])
  -- The key lives as long as its newest hit counts; refused hits never extend it.
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
  return {1, limit - count - 1, 0}
end

-- Refused and not recorded. One more hit is allowed when the oldest counted hit leaves.
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local retry = tonumber(oldest[2]) + window - now
-- TIME can step back if Redis's clock is adjusted; keep the answer within (0, window].
if retry < 1 then retry = 1 end
if retry > window then retry = window end
return {0, 0, retry}
