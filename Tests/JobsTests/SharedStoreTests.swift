import Foundation
import JobQueue
import Jobs
import ServiceTestSupport
import Testing

/// Reservations and rate-limit counters: the in-memory stores and the Redis ones alike.
@Suite("Shared stores: in memory and Redis keep the same rules", .quiet)
struct SharedStoreTests {
    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case memory, redis
        var testDescription: String { rawValue }
    }

    struct Reservation: Codable, Sendable, Equatable {
        var filename: String
        var seconds: Int
    }

    static func persist(_ kind: Store) throws -> any PersistStore {
        switch kind {
        case .memory: MemoryPersistStore()
        case .redis: RedisPersistStore(client: try client(), prefix: TestServices.uniquePrefix())
        }
    }

    static func limits(_ kind: Store) throws -> any RateLimitStore {
        switch kind {
        case .memory: MemoryRateLimitStore()
        case .redis: RedisRateLimitStore(client: try client(), prefix: TestServices.uniquePrefix())
        }
    }

    static func client() throws -> RedisClient {
        RedisClient(configuration: try RedisConfiguration(url: try TestServices.redisURL()), logger: TestServices.logger)
    }

    @Test("A value is kept until it expires; create refuses a taken key; remove forgets", arguments: Store.allCases)
    func persistence(_ kind: Store) async throws {
        let store = try Self.persist(kind)
        let value = Reservation(filename: "IMG_0042.MOV", seconds: 30)
        // A long life for the checks that need the value there (a loaded 2-core machine can pause a
        // task for seconds), and a short one, awaited without a deadline, for the expiry.
        try await store.set(key: "a", value: value, expires: .seconds(60))
        #expect(try await store.get(key: "a", as: Reservation.self) == value)
        await #expect(throws: PersistError.duplicate) { try await store.create(key: "a", value: value, expires: nil) }
        #expect(try await store.get(key: "a", as: Int.self) == nil, "a value of another type reads as nothing")
        try await store.set(key: "short", value: value, expires: .seconds(1))
        let expired = try await TestServices.eventually(timeout: .seconds(15)) { try await store.get(key: "short", as: Reservation.self) == nil }
        #expect(expired, "expired")
        try await store.remove(key: "a")
        try await store.create(key: "a", value: value, expires: nil)
        try await store.remove(key: "a")
        #expect(try await store.get(key: "a", as: Reservation.self) == nil)
        try await store.remove(key: "never there")
    }

    @Test(
        "A sliding window: admitted up to the limit of every key, then refused with the wait until there is room; each answer states the key with the least room",
        arguments: Store.allCases)
    func rateLimits(_ kind: Store) async throws {
        let store = try Self.limits(kind)
        let owner = RateLimitKey("owner:anna", limit: 2), ip = RateLimitKey("ip:10.0.0.1", limit: 3)
        // A long window for the refusals (a loaded CI machine once let 4 s pass between two calls),
        // and a short one, on keys of its own, to see a window move on (a slow machine only helps that).
        let window = Duration.seconds(60)
        let first = try await store.admit([owner, ip], window: window)
        // Owner 1 of 2, address 1 of 3: the owner has less room (one more).
        #expect(first.admitted && first.limit == 2 && first.remaining == 1, "\(first)")
        #expect(first.reset > window - .seconds(10) && first.reset <= window, "the oldest request is this one: \(first.reset)")
        let second = try await store.admit([owner, ip], window: window)
        #expect(second.admitted && second.limit == 2 && second.remaining == 0, "\(second)")
        #expect(second.reset <= first.reset, "the oldest request is the first, and time went on")
        let refused = try await store.admit([owner, ip], window: window)
        #expect(!refused.admitted && refused.limit == 2 && refused.remaining == 0, "the owner's third is refused: \(refused)")
        #expect(refused.reset > .zero && refused.reset <= window)
        let byAddress = try await store.admit([ip], window: window)
        #expect(byAddress.admitted && byAddress.limit == 3 && byAddress.remaining == 0, "a refusal counts against no key: \(byAddress)")
        let full = try await store.admit([ip], window: window)
        #expect(!full.admitted && full.limit == 3)
        // Two keys full: the refusal waits for the one that makes room last.
        let tight = RateLimitKey("owner:cleo", limit: 1), loose = RateLimitKey("ip:10.0.0.2", limit: 1)
        #expect(try await store.admit([loose], window: window).admitted)
        try await Task.sleep(for: .milliseconds(50))
        #expect(try await store.admit([tight], window: window).admitted)
        let both = try await store.admit([loose, tight], window: window)
        let alone = try await store.admit([loose], window: window)
        #expect(!both.admitted && !alone.admitted && both.reset > alone.reset, "\(both) against \(alone)")
        let short = Duration.seconds(1), once = RateLimitKey("owner:ben", limit: 1)
        #expect(try await store.admit([once], window: short).admitted)
        try await Task.sleep(for: short + .milliseconds(200))
        let again = try await store.admit([once], window: short)
        #expect(again.admitted && again.remaining == 0, "the window moved on: \(again)")
    }

    @Test("The key with the least room: fewer remaining, or as few and the longer wait")
    func tightest() {
        let a = RateLimitVerdict(admitted: true, limit: 5, remaining: 1, reset: .seconds(10))
        let b = RateLimitVerdict(admitted: true, limit: 9, remaining: 3, reset: .seconds(50))
        let c = RateLimitVerdict(admitted: true, limit: 2, remaining: 1, reset: .seconds(20))
        #expect(RateLimitVerdict.tightest(a, b) == a && RateLimitVerdict.tightest(b, a) == a)
        #expect(RateLimitVerdict.tightest(a, c) == c && RateLimitVerdict.tightest(c, a) == c)
    }
}
