import Foundation
import MomentsSupport
import ServiceTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Clients that pipeline status polls and never read their answers, against a `moments api`
/// process (its memory is its own) over the real PostgreSQL: the node keeps to each client's pace
/// instead of keeping every unsent answer.
@Suite("Clients that never read (real process)", .serialized, .alone)
struct NeverReadingClientTests {
    /// Connections that send polls as fast as the server takes them and read nothing.
    static let abusers = 50
    static let abuse: Duration = .seconds(30)

    @Test("50 connections pipeline polls for 30 s and never read: the API's peak RSS stays near idle; a client polling beside them keeps its p99")
    func neverReading() async throws {
        try await TestServices.withDatabase(callTimeout: LiveSystem.watching) { _, databaseURL in
            let environment = try LiveSystem.environment(databaseURL: databaseURL)
            let (api, base) = try await LiveSystem.startAPI(environment)
            defer { api.stop() }
            let port = try #require(Int(base.split(separator: ":").last ?? ""))
            let device = try CurlAPI.device(base)
            let token = try #require(device.last)
            // The well-behaved client: its own token, a job that is not there (404 from the poll's lane).
            let polite = "/api/v1/jobs/\(UUID().uuidString.lowercased())/status"
            func pollTimes(for span: Duration) async throws -> [Double] {
                var times: [Double] = []
                let end = ContinuousClock.now + span
                while ContinuousClock.now < end {
                    let start = ContinuousClock.now
                    let reply = try await RawHTTP.get(port: port, path: polite, headers: [token])
                    #expect(reply.status == 404, "\(reply.text)")
                    times.append(Self.seconds(ContinuousClock.now - start))
                    try await Task.sleep(for: .milliseconds(20))
                }
                return times.sorted()
            }
            let before = try await pollTimes(for: .seconds(5))
            let idle = Self.memory(api.pid, "VmRSS")

            // The abusers' poll, as in the report: a token no device has (401, the error shape).
            let path = "/api/v1/jobs/\(UUID().uuidString.lowercased())/status"
            let stranger = "Authorization: Bearer mdt_\(String(repeating: "x", count: 43))"
            let poll = Array("GET \(path) HTTP/1.1\r\nHost: api.test\r\n\(stranger)\r\n\r\n".utf8)
            let answer = try await RawHTTP.get(port: port, path: path, headers: [stranger])
            #expect(answer.status == 401, "\(answer.text)")
            let abusers = try (0..<Self.abusers).map { _ in try NeverReader(port: port, request: poll, times: 64) }
            defer { abusers.forEach { $0.close() } }
            // On a thread of its own: the tasks' threads are the polite client's and the clock's.
            let flood = Self.onThread {
                let end = ContinuousClock.now + Self.abuse
                while ContinuousClock.now < end {
                    for abuser in abusers { abuser.pump() }
                    usleep(5_000)
                }
                return abusers.reduce(0) { $0 + $1.sentRequests }
            }
            let beside = Task { try await pollTimes(for: Self.abuse - .seconds(2)) }
            var peak = idle
            let cpuBefore = Self.cpuSeconds(api.pid)
            let end = ContinuousClock.now + Self.abuse
            while ContinuousClock.now < end {
                peak = max(peak, Self.memory(api.pid, "VmRSS"))
                try await Task.sleep(for: .milliseconds(250))
            }
            let sent = await flood.value
            let during = try await beside.value
            peak = max(peak, Self.memory(api.pid, "VmHWM"))
            let cpu = Self.cpuSeconds(api.pid) - cpuBefore

            let growth = Double(peak - idle) / Double(1 << 20)
            // Each got its socket buffers full of polls in (the server reads no more while it cannot answer).
            #expect(sent > Self.abusers * 100, "the abusers got \(sent) polls in")
            #expect(growth < 8, "the API grew \(growth) MB over its idle \(idle >> 20) MB with \(Self.abusers) clients that never read")
            let (p99Before, p99During) = (Self.p99(before), Self.p99(during))
            print(
                "never-reading clients: \(sent) polls sent by \(Self.abusers); API RSS idle \(idle >> 20) MB, peak \(peak >> 20) MB, "
                    + "CPU \(cpu) s in \(Self.abuse); "
                    + "beside them p99 \(Int(p99During * 1000)) ms over \(during.count) polls (\(Int(p99Before * 1000)) ms before)")
            #expect(
                during.count > 100 && p99During < max(0.25, 4 * p99Before),
                "p99 \(p99During * 1000) ms beside them (\(during.count) polls), \(p99Before * 1000) ms before")
            #expect(api.isRunning)
        }
    }

    /// `body`'s value, run on a thread of its own.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> Task<T, Never> {
        Task {
            await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: body()) }.start()
            }
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    static func p99(_ sorted: [Double]) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)] }

    /// User and system CPU time of process `pid` so far, seconds.
    static func cpuSeconds(_ pid: pid_t) -> Double { LinuxProcess(pid).stat?.processorSeconds ?? 0 }

    /// `VmRSS` or `VmHWM` of process `pid`, bytes.
    static func memory(_ pid: pid_t, _ field: String) -> Int { LinuxProcess(pid).status(field) ?? 0 }
}

/// A connection with a small receive buffer that sends a request over and over without blocking
/// and never reads. Used from one thread at a time.
final class NeverReader: @unchecked Sendable {
    let socket: Int32
    private let request: Int
    private let burst: [UInt8]
    private var offset = 0
    private var sent = 0

    /// `times` copies of `request` make one burst.
    init(port: Int, request: [UInt8], times: Int) throws {
        self.request = request.count
        burst = Array([[UInt8]](repeating: request, count: times).joined())
        socket = try Loopback.connect(port: port, receiveBuffer: 4096)
    }

    /// Sends as much of the burst as the socket takes now, going on where the last send stopped.
    func pump() {
        let n = burst[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
        guard n > 0 else { return }
        sent += n
        offset = (offset + n) % burst.count
    }

    /// Whole requests sent so far.
    var sentRequests: Int { sent / request }

    func close() { Glibc.close(socket) }
}
