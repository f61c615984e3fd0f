import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A port nothing should ever reach: a listener on another loopback address (127.0.0.2 by default) that never
/// answers. The kernel completes every connection attempt into its accept queue, so ``connections()`` counts each one
/// that was made, even one its caller closed at once, by accepting them all when asked.
public final class TrapListener: @unchecked Sendable {
    public let host: String
    public let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var accepted = 0

    public init(host: String = "127.0.0.2") throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, host, &address.sin_addr)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, size) }
        }
        guard bound == 0, listen(listener, 512) == 0 else {
            close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.host = host
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
    }

    /// `host:port`, as a URL authority.
    public var authority: String { "\(host):\(port)" }

    /// How many connections reached the trap so far (each is accepted and closed on the way).
    public func connections() -> Int {
        lock.lock()
        defer { lock.unlock() }
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { break }
            close(connection)
            accepted += 1
        }
        return accepted
    }

    deinit { close(listener) }
}
