/// The queue's Lua scripts. Each runs atomically on the Redis server; times come from Redis's own
/// clock (`TIME`), so workers with skewed clocks agree on when a delay ends.
enum Scripts {
    private static let now = "local t = redis.call('TIME'); local now = t[1] * 1000 + math.floor(t[2] / 1000)"

    /// KEYS: queued, delayed, stream. ARGV: job id, delay in ms. Returns 1 if added, 0 if already queued.
    static let enqueue = """
        if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
        local delay = tonumber(ARGV[2])
        if delay > 0 then
          \(now)
          redis.call('ZADD', KEYS[2], now + delay, ARGV[1])
        else
          redis.call('XADD', KEYS[3], '*', 'job', ARGV[1])
        end
        return 1
        """

    /// KEYS: stream. ARGV: group, entry id, consumer. Resets the entry's idle time if the consumer still owns it.
    static let heartbeat = """
        local ok, p = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
        if not ok or #p == 0 or p[1][2] ~= ARGV[3] then return 0 end
        redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
        return 1
        """

    /// KEYS: stream, queued, delayed. ARGV: group, entry id, job id.
    static let acknowledge = """
        pcall(redis.call, 'XACK', KEYS[1], ARGV[1], ARGV[2])
        redis.call('XDEL', KEYS[1], ARGV[2])
        redis.call('SREM', KEYS[2], ARGV[3])
        redis.call('ZREM', KEYS[3], ARGV[3])
        return 1
        """

    /// KEYS: stream, queued, delayed. ARGV: group, entry id, job id, delay in ms.
    static let retry = """
        pcall(redis.call, 'XACK', KEYS[1], ARGV[1], ARGV[2])
        redis.call('XDEL', KEYS[1], ARGV[2])
        redis.call('SADD', KEYS[2], ARGV[3])
        local delay = tonumber(ARGV[4])
        if delay > 0 then
          \(now)
          redis.call('ZADD', KEYS[3], now + delay, ARGV[3])
        else
          redis.call('ZREM', KEYS[3], ARGV[3])
          redis.call('XADD', KEYS[1], '*', 'job', ARGV[3])
        end
        return 1
        """

    /// KEYS: delayed, stream. ARGV: most to move. Returns how many moved.
    static let promote = """
        \(now)
        local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
        for _, id in ipairs(ids) do
          redis.call('ZREM', KEYS[1], id)
          redis.call('XADD', KEYS[2], '*', 'job', id)
        end
        return #ids
        """

    /// KEYS: queued, delayed. ARGV: job id.
    static let remove = """
        redis.call('SREM', KEYS[1], ARGV[1])
        redis.call('ZREM', KEYS[2], ARGV[1])
        return 1
        """

    /// KEYS: dead. ARGV: job id.
    static let markDead = """
        \(now)
        redis.call('ZADD', KEYS[1], now, ARGV[1])
        return 1
        """

    /// KEYS: stream. ARGV: group, consumer, min idle ms. Claims the first entry idle that long: `[id, fields]` or nil.
    static let claimLapsed = """
        local p = redis.call('XPENDING', KEYS[1], ARGV[1], 'IDLE', tonumber(ARGV[3]), '-', '+', 1)
        if #p == 0 then return false end
        local claimed = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), p[1][1])
        if #claimed == 0 or not claimed[1] then return false end
        return claimed[1]
        """

    /// KEYS: stream, delayed, dead, paused. ARGV: group.
    /// Returns {ready, in flight, delayed, dead, ms of the oldest ready entry (0 if none), now in ms, paused (1 or 0)}.
    static let stats = """
        \(now)
        local ready, pending, oldest, last = 0, 0, 0, nil
        local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[1])
        if ok then
          local found = false
          for _, g in ipairs(groups) do
            local f = {}
            for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
            if f['name'] == ARGV[1] then
              found = true
              pending = f['pending']
              last = f['last-delivered-id']
              if f['lag'] then ready = f['lag'] else ready = #redis.call('XRANGE', KEYS[1], '(' .. last, '+') end
            end
          end
          if not found then
            ready = redis.call('XLEN', KEYS[1])
            last = '-'
          end
          local first
          if last == '-' then first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
          else first = redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', 1) end
          if #first > 0 then oldest = tonumber(string.match(first[1][1], '^(%d+)')) end
        end
        return {ready, pending, redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]), oldest, now, redis.call('GET', KEYS[4]) == '1' and 1 or 0}
        """

    /// KEYS: stream. ARGV: group, idle ms. Deletes consumers holding nothing that have been idle that long.
    static let pruneConsumers = """
        local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
        if not ok then return 0 end
        local removed = 0
        for _, c in ipairs(consumers) do
          local f = {}
          for i = 1, #c, 2 do f[c[i]] = c[i + 1] end
          if f['pending'] == 0 and f['idle'] >= tonumber(ARGV[2]) then
            redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])
            removed = removed + 1
          end
        end
        return removed
        """
}
