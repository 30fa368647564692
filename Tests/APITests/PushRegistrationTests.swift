import Foundation
import HTTPTypes
import ServiceTestSupport
import Testing

@testable import JobStore

/// `PUT` and `DELETE /api/v1/devices/me/push` in process (the pushes themselves run through real
/// processes in `PushTests`).
@Suite("Push registration (in process)", .quiet)
struct PushRegistrationTests {
    static let token = String(repeating: "ab", count: 32)

    @Test("Registered, replaced and removed per device; refused without APNs (409 push_unavailable) and without a device (401)")
    func registration() async throws {
        try await InProcessAPI.run(["APNS_KEY_ID": "KEY1234567"]) { api in
            let device = try await api.device()
            let body = try JSONSerialization.data(withJSONObject: ["token": Self.token.uppercased(), "environment": "sandbox"])
            var headers = device
            headers[.contentType] = "application/json"
            let registered = try await api.send(.put, "/api/v1/devices/me/push", headers: headers, body: body)
            let answered = try registered.json()["token"] as? String
            #expect(registered.status == 200 && answered == Self.token, "stored as lower-case hex")
            let id = try #require(UUID(uuidString: try await api.get("/api/v1/me", headers: device).json()["device_id"] as? String ?? ""))
            #expect(try await api.store.pushToken(device: id)?.environment == .sandbox)
            let replacement = try JSONSerialization.data(withJSONObject: ["token": String(repeating: "cd", count: 32), "environment": "production"])
            #expect(try await api.send(.put, "/api/v1/devices/me/push", headers: headers, body: replacement).status == 200)
            #expect(try await api.store.pushToken(device: id)?.token == String(repeating: "cd", count: 32), "one token a device")
            #expect(try await api.send(.delete, "/api/v1/devices/me/push", headers: device).status == 204)
            #expect(try await api.store.pushToken(device: id) == nil)
            let anonymous = try await api.send(.put, "/api/v1/devices/me/push", headers: [.contentType: "application/json"], body: body)
            #expect(try anonymous.error().status == 401)
        }
        try await InProcessAPI.run { api in
            var headers = try await api.device()
            headers[.contentType] = "application/json"
            let body = try JSONSerialization.data(withJSONObject: ["token": Self.token, "environment": "production"])
            let refused = try await api.send(.put, "/api/v1/devices/me/push", headers: headers, body: body).error()
            #expect(refused.status == 409 && refused.code == "push_unavailable", "\(refused)")
        }
    }
}
