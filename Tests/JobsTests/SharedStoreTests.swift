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
        "A sliding window: admitted up to the limit of every key, then refused with the wait until there is room",
        arguments: Store.allCases)
    func rateLimits(_ kind: Store) async throws {
        let store = try Self.limits(kind)
        let owner = RateLimitKey("owner:anna", limit: 2), ip = RateLimitKey("ip:10.0.0.1", limit: 3)
        // A long window for the refusals (a loaded CI machine once let 4 s pass between two calls),
        // and a short one, on keys of its own, to see a window move on (a slow machine only helps that).
        let window = Duration.seconds(60)
        #expect(try await store.admit([owner, ip], window: window) == nil)
        #expect(try await store.admit([owner, ip], window: window) == nil)
        let wait = try #require(try await store.admit([owner, ip], window: window), "the owner's third is refused")
        #expect(wait > .zero && wait <= window)
        #expect(try await store.admit([ip], window: window) == nil, "a refusal counts against no key")
        #expect(try await store.admit([ip], window: window) != nil)
        let short = Duration.seconds(1), once = RateLimitKey("owner:ben", limit: 1)
        #expect(try await store.admit([once], window: short) == nil)
        try await Task.sleep(for: short + .milliseconds(200))
        #expect(try await store.admit([once], window: short) == nil, "the window moved on")
    }
}
