import Foundation
import JobQueue
import Testing

/// KEDA scales workers on the Redis stream by name: the manifests must name the stream and group
/// this code really uses (scripts/check-deploy checks the rendered manifests agree with each other).
@Suite("Deployment files name the queue as the code stores it")
struct DeploymentNamesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("The KEDA ScaledObject watches <MOMENTS_QUEUE_PREFIX>:jobs and the group workers")
    func kedaNamesTheStream() throws {
        let configMap = try Self.text("k8s/base/configmap.yaml")
        let prefix = try #require(configMap.firstMatch(of: /MOMENTS_QUEUE_PREFIX: *(\S+)/)?.output.1, "the ConfigMap sets the prefix")
        let keys = QueueKeys(prefix: String(prefix))
        let scaling = try Self.text("k8s/base/autoscaling.yaml")
        let streams = scaling.matches(of: /\n *stream: *(\S+)/).map { String($0.output.1) }
        let groups = scaling.matches(of: /\n *consumerGroup: *(\S+)/).map { String($0.output.1) }
        #expect(!streams.isEmpty && streams.allSatisfy { $0 == keys.stream }, "\(streams) vs \(keys.stream)")
        #expect(groups.count == streams.count && groups.allSatisfy { $0 == keys.group }, "\(groups) vs \(keys.group)")
        #expect(try Self.text(".env.example").contains("MOMENTS_QUEUE_PREFIX=\(prefix)\n"), "the default is the same everywhere")
    }
}
