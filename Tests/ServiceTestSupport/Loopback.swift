import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Plain TCP sockets on 127.0.0.1, for tests that need a client's or a server's exact behaviour:
/// a connection with a small receive buffer that never reads, a port that listens and never
/// accepts, a proxy that breaks exchanges.
public enum Loopback {
    /// A socket connected to 127.0.0.1:`port`. `receiveBuffer` (bytes) is set before connecting,
    /// so the window the server sees is small from the start; `receiveTimeout` bounds each read.
    public static func connect(port: Int, receiveBuffer: Int32? = nil, receiveTimeout: Duration? = nil) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let receiveTimeout {
            let (seconds, attoseconds) = receiveTimeout.components
            var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        var address = address(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            close(descriptor)
            throw TestFailure("connect to 127.0.0.1:\(port): errno \(error)")
        }
        return descriptor
    }

    /// Whether something accepts connections on 127.0.0.1:`port`.
    public static func canConnect(port: Int) -> Bool {
        guard let descriptor = try? connect(port: port) else { return false }
        close(descriptor)
        return true
    }

    /// A socket listening on a free port of 127.0.0.1. Until something accepts them, the kernel's
    /// backlog takes connections, and nothing answers on them.
    public static func listen(backlog: Int32 = 16, reuseAddress: Bool = false) throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: errno \(errno)") }
        if reuseAddress {
            var yes: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && Glibc.listen(descriptor, backlog) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard listening else {
            let error = errno
            close(descriptor)
            throw TestFailure("listen on 127.0.0.1: errno \(error)")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    private static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
