import CurlHTTP
import Foundation
import JobStore
import MomentsModel
import ServiceTestSupport
import Testing

@testable import Worker

/// Webhooks go where their user said only when that is on the public internet: checked when the
/// job is submitted (the API's tests) and again when each delivery is made (here).
@Suite("Webhook destinations")
struct WebhookDestinationTests {
    @Test(
        "Addresses: loopback, private, link-local, CGNAT, unique-local and the rest are not public",
        arguments: [
            ("127.0.0.1", false), ("10.1.2.3", false), ("172.16.0.1", false), ("172.31.255.255", false), ("192.168.1.1", false),
            ("169.254.169.254", false), ("100.64.0.1", false), ("100.127.255.255", false), ("0.0.0.0", false), ("224.0.0.1", false),
            ("255.255.255.255", false), ("198.18.0.1", false), ("192.0.2.10", false),
            ("::1", false), ("::", false), ("fd00::1", false), ("fc00::1", false), ("fe80::1", false), ("ff02::1", false),
            ("::ffff:127.0.0.1", false), ("::ffff:10.0.0.1", false), ("64:ff9b::a9fe:a9fe", false), ("2001:db8::1", false),
            ("1.1.1.1", true), ("8.8.8.8", true), ("172.32.0.1", true), ("100.128.0.1", true), ("2606:4700:4700::1111", true),
            ("::ffff:1.1.1.1", true),
        ])
    func classification(address: String, isPublic: Bool) throws {
        let parsed = try #require(IPAddress(address))
        #expect(parsed.isPublic == isPublic, "\(address)")
    }

    @Test("URLs: scheme, credentials, port and every address of the host are checked; development may allow more")
    func policy() throws {
        let strict = DestinationPolicy()
        for (url, refusal) in [
            ("ftp://1.1.1.1/hook", "must be an absolute http:// or https:// URL without credentials"),
            ("https://user:pw@1.1.1.1/hook", "must be an absolute http:// or https:// URL without credentials"),
            ("http://1.1.1.1:8080/hook", "may use port 80 or 443 only, not 8080"),
            ("http://127.0.0.1/hook", "must name a host on the public internet; 127.0.0.1 is not"),
            ("http://169.254.169.254/latest/meta-data/", "must name a host on the public internet; 169.254.169.254 is not"),
            ("http://[::1]/hook", "must name a host on the public internet; ::1 is not"),
            ("http://localhost/hook", "must name a host on the public internet; localhost is not"),
            ("http://no-such-host.invalid/hook", "names a host that could not be found (no-such-host.invalid)"),
        ] {
            let refused = #expect(throws: DestinationRefusal.self, "\(url)") { try strict.checkBlocking(url) }
            #expect(refused?.reason == refusal, "\(url)")
        }
        let checked = try strict.checkBlocking("https://1.1.1.1/hook")
        #expect(checked.host == "1.1.1.1" && checked.port == 443 && checked.address == "1.1.1.1")
        let development = DestinationPolicy(allowPrivate: true, ports: nil)
        #expect(try development.checkBlocking("http://127.0.0.1:8080/hook").address == "127.0.0.1")

        #expect(try DestinationPolicy(environment: [:]) == DestinationPolicy())
        #expect(try DestinationPolicy(environment: ["WEBHOOK_ALLOW_PRIVATE": "true", "WEBHOOK_ALLOWED_PORTS": "*"]) == development)
        #expect(try DestinationPolicy(environment: ["WEBHOOK_ALLOWED_PORTS": "443, 8443"]).ports == [443, 8443])
        #expect(throws: SettingError.self) { try DestinationPolicy(environment: ["WEBHOOK_ALLOWED_PORTS": "http"]) }
        #expect(throws: SettingError.self) { try DestinationPolicy(environment: ["WEBHOOK_ALLOWED_PORTS": "0"]) }
    }

    @Test("A delivery whose host is not public (checked again at delivery) is given up without a request being made")
    func refusedAtDelivery() async throws {
        try await TestServices.withDatabase { store, _ in
            // Accepted when submitted (say, before WEBHOOK_ALLOW_PRIVATE was turned off).
            let job = try await store.create(NewJob(sourceKey: "sources/hook.mp4", callbackURL: "http://127.0.0.1:9/hook"))
            _ = try await store.cancel(job.id)
            let dispatcher = WebhookDispatcher(
                store: store, configuration: WebhookConfiguration(secret: "0123456789abcdef0123"),
                logger: TestServices.logger)
            let due = try await store.takeDueWebhooks(limit: 10, lease: .seconds(30))
            let delivery = try #require(due.first { $0.jobID == job.id })
            await dispatcher.deliver(delivery)
            let recorded = try await store.webhookDeliveries(job: job.id)
            #expect(recorded.count == 1)
            #expect(recorded.first?.gaveUp == true && recorded.first?.delivered == false && recorded.first?.lastStatus == nil)
            #expect(recorded.first?.lastError == "refused: the callback URL may use port 80 or 443 only, not 9")

            let second = try await store.create(NewJob(sourceKey: "sources/hook2.mp4", callbackURL: "http://127.0.0.1/hook"))
            _ = try await store.cancel(second.id)
            let next = try #require(try await store.takeDueWebhooks(limit: 10, lease: .seconds(30)).first { $0.jobID == second.id })
            await dispatcher.deliver(next)
            #expect(
                try await store.webhookDeliveries(job: second.id).first?.lastError
                    == "refused: the callback URL must name a host on the public internet; 127.0.0.1 is not")
        }
    }
}
