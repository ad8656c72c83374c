-- The presence of one app's client sockets, run atomically by Redis. Four keys, all with the
-- app in one hash tag so that a Redis Cluster keeps them in one slot:
-- KEYS[1]  sorted set  socket → expiry in microseconds of Redis's TIME (the live sockets)
-- KEYS[2]  hash        socket → user
-- KEYS[3]  hash        user → socket (one socket per user)
-- KEYS[4]  hash        socket → info (what the session list shows)
-- ARGV[1]  operation:
-- admit:    ARGV[2] socket, ARGV[3] user, ARGV[4] ttl in microseconds, ARGV[5] limit,
--           ARGV[6] info; returns {1, replaced socket or nothing} or {0}
-- renew:    ARGV[2] ttl in microseconds, then socket, user pairs; returns
--           {restored sockets, superseded sockets}
-- release:  ARGV[2...] sockets; returns how many were live
-- describe: ARGV[2] socket, ARGV[3] info; returns 1 if the socket was live, else 0
-- count:    returns how many sockets are live
-- list:     returns socket, user, info (false when none), flat
-- socketof: ARGV[2] user; returns the user's live socket or nil
--
-- Every call first forgets the expired sockets. Redis 7 replicates a script's effects, not
-- the script, so writes after TIME are allowed.
local live, owner, byUser, info = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op = ARGV[1]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- unpack takes at most a few thousand values at once: bulk commands go in chunks.
local chunk = 1000

local function forget(s)
  local u = redis.call('HGET', owner, s)
  if u and redis.call('HGET', byUser, u) == s then
    redis.call('HDEL', byUser, u)
  end
  redis.call('HDEL', owner, s)
  redis.call('HDEL', info, s)
  redis.call('ZREM', live, s)
end

local expired = redis.call('ZRANGEBYSCORE', live, '-inf', now)
for _, s in ipairs(expired) do forget(s) end

-- The keys live as long as the latest socket, so an app abandoned by every node (all of
-- them killed) disappears on its own; an app with no socket left has no keys.
local function keepUntilLast()
  local last = redis.call('ZRANGE', live, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', live, owner, byUser, info)
    return
  end
  local ms = math.ceil((tonumber(last[2]) - now) / 1000)
  for _, k in ipairs({live, owner, byUser, info}) do
    redis.call('PEXPIRE', k, ms)
  end
end

-- An empty info is none.
local function describe(s, v)
  if v == '' then
    redis.call('HDEL', info, s)
  else
    redis.call('HSET', info, s, v)
  end
end

local function put(s, u, expires)
  redis.call('ZADD', live, expires, s)
  redis.call('HSET', owner, s, u)
  redis.call('HSET', byUser, u, s)
end

if op == 'admit' then
  local s, u, limit = ARGV[2], ARGV[3], tonumber(ARGV[5])
  local expires = now + tonumber(ARGV[4])
  if redis.call('ZSCORE', live, s) then
    if redis.call('HGET', owner, s) ~= u then
      return redis.error_reply('socket ' .. s .. ' is live for another user')
    end
    put(s, u, expires)
    describe(s, ARGV[6])
    keepUntilLast()
    return {1}
  end
  local earlier = redis.call('HGET', byUser, u)
  local n = redis.call('ZCARD', live)
  if earlier then n = n - 1 end
  if n >= limit then
    return {0}
  end
  if earlier then forget(earlier) end
  put(s, u, expires)
  describe(s, ARGV[6])
  keepUntilLast()
  if earlier then return {1, earlier} end
  return {1}
elseif op == 'renew' then
  local expires = now + tonumber(ARGV[2])
  local restored, superseded = {}, {}
  local ids = {}
  for i = 3, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
  for first = 1, #ids, chunk do
    local last = math.min(first + chunk - 1, #ids)
    local scores = redis.call('ZMSCORE', live, unpack(ids, first, last))
    local extend = {}
    for j = first, last do
      local s, u = ids[j], ARGV[2 * j + 2]
      if scores[j - first + 1] then
        extend[#extend + 1] = expires
        extend[#extend + 1] = s
      elseif redis.call('HEXISTS', byUser, u) == 1 then
        superseded[#superseded + 1] = s
      else
        put(s, u, expires)
        restored[#restored + 1] = s
      end
    end
    if #extend > 0 then
      redis.call('ZADD', live, 'XX', unpack(extend))
    end
  end
  keepUntilLast()
  return {restored, superseded}
elseif op == 'release' then
  local n = 0
  for i = 2, #ARGV do
    if redis.call('ZSCORE', live, ARGV[i]) then
      forget(ARGV[i])
      n = n + 1
    end
  end
  keepUntilLast()
  return n
elseif op == 'describe' then
  if not redis.call('ZSCORE', live, ARGV[2]) then
    return 0
  end
  describe(ARGV[2], ARGV[3])
  return 1
elseif op == 'count' then
  return redis.call('ZCARD', live)
elseif op == 'list' then
  local ids = redis.call('ZRANGE', live, 0, -1)
  local out = {}
  for first = 1, #ids, chunk do
    local last = math.min(first + chunk - 1, #ids)
    local users = redis.call('HMGET', owner, unpack(ids, first, last))
    local infos = redis.call('HMGET', info, unpack(ids, first, last))
    for j = first, last do
      out[#out + 1] = ids[j]
      out[#out + 1] = users[j - first + 1]
      out[#out + 1] = infos[j - first + 1]
    end
  end
  return out
elseif op == 'socketof' then
  return redis.call('HGET', byUser, ARGV[2])
end
return redis.error_reply('unknown operation ' .. tostring(op))
