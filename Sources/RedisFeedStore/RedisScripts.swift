/// The Lua scripts that change feeds in Redis. Each runs atomically (Redis runs one script at a time,
/// and replicates and appends it to the AOF as one unit), so a commit is all or nothing.
public enum RedisScripts {
    /// A Lua function the scripts that commit a write start with: `remember(ids, order, other, id,
    /// record, ttl, cap, keep)` keeps `record` (`done <version> <answer>`) under the write id `id` in the
    /// hash `ids` (``RedisKeys/writes(_:)``), and `id` in the sorted set `order` of its kind
    /// (``RedisKeys/writeOrder(_:keyed:)``) scored by now (ms, Redis's `TIME`). Then it drops from both
    /// the ids older than `ttl` seconds and the oldest beyond `cap` (at most 128 a call: each call adds
    /// one), and raises the hash's field ` trimmed` (no write id has a space) to the newest commit time
    /// dropped, which ``resolve`` reads. `ids`, `order` and `other` (the other kind's set) are kept
    /// `keep` seconds after the feed's last write, so that a feed no longer written leaves nothing.
    ///
    /// - Complexity: O(log n + d) for a set of n ids and d dropped; the ids of a feed are at most the two
    ///   caps, so Redis's memory for them is bounded by the number of feeds, not the number of writes.
    static let remember = """
        local function remember(ids, order, other, id, record, ttl, cap, keep)
          local time = redis.call('TIME')
          local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
          redis.call('HSET', ids, id, record)
          redis.call('ZADD', order, now, id)
          local count = math.max(redis.call('ZCOUNT', order, '-inf', '(' .. (now - tonumber(ttl) * 1000)), redis.call('ZCARD', order) - tonumber(cap))
          if count > 0 then
            local oldest = redis.call('ZRANGE', order, 0, math.min(count, 128) - 1, 'WITHSCORES')
            local gone = {}
            for i = 1, #oldest, 2 do gone[#gone + 1] = oldest[i] end
            redis.call('ZREMRANGEBYRANK', order, 0, #gone - 1)
            redis.call('HDEL', ids, unpack(gone))
            local newest = tonumber(oldest[#oldest])
            if newest > tonumber(redis.call('HGET', ids, ' trimmed') or '0') then redis.call('HSET', ids, ' trimmed', newest) end
          end
          local ms = tonumber(keep) * 1000
          redis.call('PEXPIRE', ids, ms)
          redis.call('PEXPIRE', order, ms)
          redis.call('PEXPIRE', other, ms)
        end

        """

    /// Commits one write of one feed.
    ///
    /// KEYS: 1 `feed:<name>`, 2 `batches:<name>`, 3 `write:<name>:<id>` (an earlier build's), 4 `epoch`,
    /// 5 `lease:<name>`, 6 `attempt:<name>:<nonce>`, 7 `usage`, 8 `writes:<name>`, 9 the id kind's
    /// `keyed:<name>` or `drawn:<name>`, 10 the other kind's.
    /// ARGV: 1 epoch, 2 base version (0: create), 3 history, 4 snapshot, 5 `1` when a state is given,
    /// 6 state, 7 batch event (empty: none), 8 replay window (the stream's cap; 0 keeps none),
    /// 9 seconds the write id is kept, 10 channel, 11 fencing token (empty: none), 12 answer,
    /// 13 `1` when the stored state must be ARGV 14 (a view model's change computed from it),
    /// 14 that state, 15 the most feeds (`-1`: no limit), 16 the most bytes of all feeds (`-1`: no
    /// limit), 17 `1` when the feed counts against the most feeds (hosted view models do not),
    /// 18 the committing instance's id (published after the lengths when not empty, so that it can skip
    /// its own commits), 19 the write id, 20 the most ids of its kind kept for the feed, 21 seconds the
    /// feed's ids outlive its last write.
    ///
    /// In order: the epoch must be the one the instance holds (else `{"epoch", current or ""}`: Redis
    /// lost data); a write id already done returns its first answer (`{"done", "done <v> <answer>"}`);
    /// an attempt given up by ``resolve`` does nothing (`{"aborted"}`); the lease must hold the fencing
    /// token (`{"fenced", holder or ""}`); the stored version and history must be the base, and the
    /// state the expected one (else `{"conflict", version, history}`); the limits, counted over every
    /// instance's feeds in `usage` (else `{"limit", "feeds" or "bytes", used, most}`). Then the
    /// snapshot, state, history and version are stored, the batch is appended to the stream with the id
    /// `<version>-0` and the stream capped at the window (the first write is `SETRANGE` of the epoch
    /// with nothing, which changes nothing: a Redis whose memory is full refuses a script whose first
    /// write would grow it, `OOM`, before anything is written), `usage` is brought up to date, the answer is
    /// kept under the write id (``remember``: for ARGV 9 seconds, among the last ARGV 20 of its kind), the commit is published (``RedisStore/message(_:)``'s
    /// format), and `{"ok", version}` returned.
    public static let commit = remember + """
        local found = redis.call('MGET', KEYS[4], KEYS[3], KEYS[6], KEYS[5])
        if found[1] ~= ARGV[1] then return {'epoch', found[1] or ''} end
        if found[2] then return {'done', found[2]} end
        local kept = redis.call('HGET', KEYS[8], ARGV[19])
        if kept then return {'done', kept} end
        if found[3] then return {'aborted'} end
        if ARGV[11] ~= '' and found[4] ~= ARGV[11] then return {'fenced', found[4] or ''} end
        local stored = redis.call('HMGET', KEYS[1], 'version', 'history', 'state', 'bytes', 'wbytes', 'counted')
        local current = tonumber(stored[1] or '0')
        local base = tonumber(ARGV[2])
        if current ~= base or (base > 0 and stored[2] ~= ARGV[3]) then
          return {'conflict', current, stored[2] or ''}
        end
        if ARGV[13] == '1' and (stored[3] or '') ~= ARGV[14] then
          return {'conflict', current, stored[2] or ''}
        end
        local window = tonumber(ARGV[8])
        local oldBytes = tonumber(stored[4] or '0')
        local wbytes = tonumber(stored[5] or '0')
        local trim = 0
        if base > 0 and window > 0 and ARGV[7] ~= '' then
          local length = redis.call('XLEN', KEYS[2])
          if length >= window then
            for _, entry in ipairs(redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', length - window + 1)) do
              trim = trim + #entry[2][2]
            end
          end
          wbytes = wbytes + #ARGV[7] - trim
        else
          wbytes = 0
        end
        local newBytes = #ARGV[4] + wbytes
        local counted = base == 0 and ARGV[17] == '1'
        local checkFeeds = counted and tonumber(ARGV[15]) >= 0
        local checkBytes = newBytes > oldBytes and tonumber(ARGV[16]) >= 0
        if checkFeeds or checkBytes then
          local usage = redis.call('HMGET', KEYS[7], 'feeds', 'bytes')
          local feeds = tonumber(usage[1] or '0')
          local bytes = tonumber(usage[2] or '0')
          if checkFeeds and feeds + 1 > tonumber(ARGV[15]) then return {'limit', 'feeds', feeds, ARGV[15]} end
          if checkBytes and bytes - oldBytes + newBytes > tonumber(ARGV[16]) then return {'limit', 'bytes', bytes, ARGV[16]} end
        end
        redis.call('SETRANGE', KEYS[4], 0, '')
        local version = base + 1
        if base == 0 then redis.call('DEL', KEYS[1], KEYS[2]) end
        local state = ''
        local stateLength = -1
        if ARGV[5] == '1' then
          state = ARGV[6]
          stateLength = #state
          redis.call('HSET', KEYS[1], 'history', ARGV[3], 'version', version, 'snapshot', ARGV[4], 'bytes', newBytes, 'wbytes', wbytes, 'state', state)
        else
          redis.call('HSET', KEYS[1], 'history', ARGV[3], 'version', version, 'snapshot', ARGV[4], 'bytes', newBytes, 'wbytes', wbytes)
        end
        if base == 0 then redis.call('HSET', KEYS[1], 'counted', counted and '1' or '0') end
        if counted then redis.call('HINCRBY', KEYS[7], 'feeds', 1) end
        if newBytes ~= oldBytes then redis.call('HINCRBY', KEYS[7], 'bytes', newBytes - oldBytes) end
        if window > 0 and ARGV[7] ~= '' then
          redis.call('XADD', KEYS[2], 'MAXLEN', window, version .. '-0', 'e', ARGV[7])
        elseif window == 0 then
          redis.call('DEL', KEYS[2])
        end
        remember(KEYS[8], KEYS[9], KEYS[10], ARGV[19], 'done ' .. version .. ' ' .. ARGV[12], ARGV[9], ARGV[20], ARGV[21])
        redis.call('PUBLISH', ARGV[10], ARGV[3] .. ' ' .. version .. ' ' .. #ARGV[7] .. ' ' .. #ARGV[4] .. ' ' .. stateLength .. (ARGV[18] ~= '' and ' ' .. ARGV[18] or '') .. '\\n' .. ARGV[7] .. ARGV[4] .. state)
        return {'ok', version}
        """

    /// Compares this instance's settings with the ones the running instances share, and joins them.
    ///
    /// KEYS: 1 `settings`, 2 `instances`. ARGV: 1 the instance's id, 2 milliseconds its liveness lasts,
    /// then name, value pairs.
    ///
    /// Liveness entries past their time (Redis's clock, `TIME`) are dropped first. With no other instance
    /// present, this one's settings become the shared ones (a deployment stopped and started again
    /// with a new `--replay` takes it); else each must equal the stored one (a setting not stored yet
    /// is stored). Agreeing, the instance is present until ARGV 2 milliseconds from now (its store
    /// runs this again every second to renew it). Returns the differing settings as name, stored value pairs (empty: agreed).
    public static let agree = """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
        local others = redis.call('ZCARD', KEYS[2])
        if redis.call('ZSCORE', KEYS[2], ARGV[1]) then others = others - 1 end
        local differing = {}
        for i = 3, #ARGV, 2 do
          local kept = redis.call('HGET', KEYS[1], ARGV[i])
          if others == 0 or not kept then
            redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
          elseif kept ~= ARGV[i + 1] then
            differing[#differing + 1] = ARGV[i]
            differing[#differing + 1] = kept
          end
        end
        if #differing == 0 then redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1]) end
        return differing
        """

    /// Settles a commit whose answer was lost: either it is done (its answer comes back), or its attempt
    /// is marked given up so that, should the script still arrive, it does nothing.
    ///
    /// KEYS: 1 `write:<name>:<id>` (an earlier build's), 2 `attempt:<name>:<nonce>`, 3 `writes:<name>`.
    /// ARGV: 1 seconds the attempt is kept, 2 the write id, 3 milliseconds since the attempt was sent.
    /// Returns `{"done", "done <v> <answer>"}`, `{"aborted"}`, or `{"unknown"}` (the attempt is marked
    /// given up, but an id committed since it was sent, less a second for the clocks, may have been
    /// dropped from `writes:<name>` by its cap: whether this one was cannot be said).
    public static let resolve = """
        local written = redis.call('GET', KEYS[1]) or redis.call('HGET', KEYS[3], ARGV[2])
        if written then return {'done', written} end
        redis.call('SET', KEYS[2], '1', 'EX', ARGV[1])
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        local trimmed = tonumber(redis.call('HGET', KEYS[3], ' trimmed') or '0')
        if trimmed >= now - tonumber(ARGV[3]) - 1000 then return {'unknown'} end
        return {'aborted'}
        """

    /// Keeps the answer of a write that changed nothing under a client's write id, unless one is kept.
    ///
    /// KEYS: 1 `write:<name>:<id>` (an earlier build's), 2 `writes:<name>`, 3 `keyed:<name>`,
    /// 4 `drawn:<name>`. ARGV: 1 the write id, 2 `done <version> <answer>`, 3 seconds it is kept, 4 the
    /// most keyed ids, 5 seconds the feed's ids outlive its last write.
    /// Returns the record kept before (the first attempt committed meanwhile), or nil when ARGV 2 is kept now.
    public static let recordAnswer = remember + """
        local kept = redis.call('GET', KEYS[1]) or redis.call('HGET', KEYS[2], ARGV[1])
        if kept then return kept end
        remember(KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
        return false
        """

    /// Deletes one feed: its hash and its history stream.
    ///
    /// KEYS: as ``commit``'s (5 is unused). ARGV: 1 epoch, 2 seconds the write id is kept, 3 channel,
    /// 4 answer, 5 the write id, 6 the most ids of its kind, 7 seconds the feed's ids outlive its last write.
    ///
    /// The epoch, a done write id and a given-up attempt as in ``commit``; then, if the feed exists, both
    /// keys are removed (first: a delete frees memory, and a script whose first write frees memory runs
    /// even while Redis is full), `usage` brought down, and `<history> 0\n` published (version 0: deleted). Answers `{"ok", 1}`, or
    /// `{"ok", 0}` when there was no feed; the write id keeps `done <1 or 0> <answer>`.
    public static let delete = remember + """
        local epoch = redis.call('GET', KEYS[4])
        if epoch ~= ARGV[1] then return {'epoch', epoch or ''} end
        local written = redis.call('GET', KEYS[3]) or redis.call('HGET', KEYS[8], ARGV[5])
        if written then return {'done', written} end
        if redis.call('EXISTS', KEYS[6]) == 1 then return {'aborted'} end
        local stored = redis.call('HMGET', KEYS[1], 'history', 'bytes', 'counted')
        local history = stored[1]
        local existed = 0
        if history then
          existed = 1
          redis.call('DEL', KEYS[1], KEYS[2])
          if stored[3] == '1' then redis.call('HINCRBY', KEYS[7], 'feeds', -1) end
          redis.call('HINCRBY', KEYS[7], 'bytes', -tonumber(stored[2] or '0'))
          redis.call('PUBLISH', ARGV[3], history .. ' 0\\n')
        end
        remember(KEYS[8], KEYS[9], KEYS[10], ARGV[5], 'done ' .. existed .. ' ' .. ARGV[4], ARGV[2], ARGV[6], ARGV[7])
        return {'ok', existed}
        """

    /// Replaces a feed's view-model state without a new version (its rendering did not change).
    ///
    /// KEYS as ``commit``'s. ARGV: 1 epoch, 2 the version the state belongs to, 3 state, 4 seconds the
    /// write id is kept, 5 `1` when the stored state must be ARGV 6, 6 that state, 7 channel, 8 answer,
    /// 9 the instance's id, 10 the history of that version (empty: not checked), 11 a lease's fencing
    /// token (empty: none), 12 the write id, 13 the most ids of its kind, 14 seconds the feed's ids outlive its last write.
    /// The epoch, a done write id, a given-up attempt and the lease as in ``commit``; the feed must be at that
    /// version of that history with the expected state (else `{"conflict", version, history}`). Publishes the state
    /// (no snapshot, no batch) so other instances' caches hold it, with ARGV 9, the instance's id, as
    /// ``commit`` does. Answers `{"ok", version}`.
    public static let viewState = remember + """
        local epoch = redis.call('GET', KEYS[4])
        if epoch ~= ARGV[1] then return {'epoch', epoch or ''} end
        local written = redis.call('GET', KEYS[3]) or redis.call('HGET', KEYS[8], ARGV[12])
        if written then return {'done', written} end
        if redis.call('EXISTS', KEYS[6]) == 1 then return {'aborted'} end
        if ARGV[11] ~= '' then
          local holder = redis.call('GET', KEYS[5])
          if holder ~= ARGV[11] then return {'fenced', holder or ''} end
        end
        local stored = redis.call('HMGET', KEYS[1], 'version', 'history', 'state')
        local current = tonumber(stored[1] or '0')
        if current == 0 or current ~= tonumber(ARGV[2]) or (ARGV[10] ~= '' and stored[2] ~= ARGV[10]) then return {'conflict', current, stored[2] or ''} end
        if ARGV[5] == '1' and (stored[3] or '') ~= ARGV[6] then return {'conflict', current, stored[2] or ''} end
        redis.call('HSET', KEYS[1], 'state', ARGV[3])
        remember(KEYS[8], KEYS[9], KEYS[10], ARGV[12], 'done ' .. current .. ' ' .. ARGV[8], ARGV[4], ARGV[13], ARGV[14])
        redis.call('PUBLISH', ARGV[7], stored[2] .. ' ' .. current .. ' 0 -1 ' .. #ARGV[3] .. (ARGV[9] ~= '' and ' ' .. ARGV[9] or '') .. '\\n' .. ARGV[3])
        return {'ok', current}
        """

    /// Gives a feed a new history at the next version, keeping its snapshot and state: Redis holds an
    /// older version than an instance served (an old backup restored, a lagging replica promoted), so
    /// the versions after it would be numbered again with other content. Clients then get a snapshot.
    ///
    /// KEYS: 1 `feed:<name>`, 2 `batches:<name>`, 3 `epoch`, 4 `usage`. ARGV: 1 epoch, 2 the history
    /// and 3 the version Redis was found at, 4 the new history, 5 channel.
    /// Returns `{"ok", version}`, `{"epoch", current or ""}`, or `{"conflict", version, history}` when
    /// the feed moved meanwhile (someone else already did it, or a write came).
    public static let newHistory = """
        local epoch = redis.call('GET', KEYS[3])
        if epoch ~= ARGV[1] then return {'epoch', epoch or ''} end
        local stored = redis.call('HMGET', KEYS[1], 'version', 'history', 'snapshot', 'state', 'wbytes')
        local current = tonumber(stored[1] or '0')
        if current ~= tonumber(ARGV[3]) or stored[2] ~= ARGV[2] then return {'conflict', current, stored[2] or ''} end
        local version = current + 1
        redis.call('DEL', KEYS[2])
        redis.call('HSET', KEYS[1], 'history', ARGV[4], 'version', version, 'bytes', #stored[3], 'wbytes', 0)
        redis.call('HINCRBY', KEYS[4], 'bytes', -tonumber(stored[5] or '0'))
        local state = stored[4] or ''
        local stateLength = stored[4] and #state or -1
        redis.call('PUBLISH', ARGV[5], ARGV[4] .. ' ' .. version .. ' 0 ' .. #stored[3] .. ' ' .. stateLength .. '\\n' .. stored[3] .. state)
        return {'ok', version}
        """
}
