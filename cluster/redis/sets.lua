-- Expiring sets, run atomically by Redis. One sorted set per set: member → expiry in
-- microseconds of Redis's own TIME, so every node shares one clock. A member is live while
-- now < expiry; every call first drops the expired ones.
-- KEYS[1]  the sorted set
-- ARGV[1]  operation: add, take, members, count
-- add:     ARGV[2] member, ARGV[3] ttl in microseconds, ARGV[4] limit (0: none); returns 1
-- take:    ARGV[2] member; returns 1 if it was live, else 0 (removed either way)
-- members: returns the live members
-- count:   returns how many members are live
-- acquire: ARGV[2] member, ARGV[3] ttl in microseconds, ARGV[4] limit; adds (or renews) the
--          member when it is live already or fewer than limit are live: returns 1, else 0
--
-- Redis 7 replicates a script's effects, not the script, so writes after TIME are allowed.
local key = KEYS[1]
local op = ARGV[1]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

redis.call('ZREMRANGEBYSCORE', key, '-inf', now)

-- The key lives as long as its latest member, so an abandoned set disappears on its own.
local function keepUntilLast()
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', key, math.ceil((tonumber(last[2]) - now) / 1000))
end

if op == 'acquire' then
  local member = ARGV[2]
  if not redis.call('ZSCORE', key, member) and redis.call('ZCARD', key) >= tonumber(ARGV[4]) then
    return 0
  end
  redis.call('ZADD', key, now + tonumber(ARGV[3]), member)
  keepUntilLast()
  return 1
elseif op == 'add' then
  local member = ARGV[2]
  local ttl = tonumber(ARGV[3])
  local limit = tonumber(ARGV[4])
  redis.call('ZADD', key, now + ttl, member)
  if limit > 0 then
    local excess = redis.call('ZCARD', key) - limit
    if excess > 0 then
      -- Evict the soonest-expiring members other than the one just added: among the
      -- excess+1 lowest scores at most one is it. Equal scores come in member order.
      local evict = {}
      for _, m in ipairs(redis.call('ZRANGE', key, 0, excess)) do
        if #evict == excess then break end
        if m ~= member then evict[#evict + 1] = m end
      end
      redis.call('ZREM', key, unpack(evict))
    end
  end
  -- The key lives as long as its latest member, so an abandoned set disappears on its own.
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', key, math.ceil((tonumber(last[2]) - now) / 1000))
  return 1
elseif op == 'take' then
  -- Expired members were dropped above: a member still here is live.
  return redis.call('ZREM', key, ARGV[2])
elseif op == 'members' then
  return redis.call('ZRANGE', key, 0, -1)
elseif op == 'count' then
  return redis.call('ZCARD', key)
end
return redis.error_reply('unknown operation ' .. tostring(op))
