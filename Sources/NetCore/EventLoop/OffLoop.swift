import CNetShims
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Blocking work (name resolution, file reads) run on a thread pool, never on a loop thread.
package enum OffLoop {
    private static let queue = DispatchQueue(label: "moya-gateway.blocking", attributes: .concurrent)

    /// Runs `work` on the blocking pool and returns its result.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try work() })
            }
        }
    }

    /// Resolves `host` to socket addresses with `getaddrinfo` off the loop; numeric hosts resolve without a lookup.
    package static func resolve(host: String, port: Int) async throws -> [SocketAddress] {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let numeric = SocketAddress(numericHost: bare, port: port) { return [numeric] }
        if bare == "localhost", let loopback = SocketAddress(numericHost: "127.0.0.1", port: port) { return [loopback] }
        return try await run {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            hints.ai_family = AF_UNSPEC
            var result: UnsafeMutablePointer<addrinfo>?
            let rc = getaddrinfo(bare, String(port), &hints, &result)
            guard rc == 0, let first = result else { throw SystemError("getaddrinfo \(bare)", errno: rc) }
            defer { freeaddrinfo(first) }
            var addresses: [SocketAddress] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let entry = cursor {
                if let sockaddr = entry.pointee.ai_addr {
                    var storage = sockaddr_storage()
                    withUnsafeMutableBytes(of: &storage) { target in
                        target.copyMemory(
                            from: UnsafeRawBufferPointer(start: sockaddr, count: Int(entry.pointee.ai_addrlen)))
                    }
                    if let address = SocketAddress(storage: storage), !addresses.contains(address) {
                        addresses.append(address)
                    }
                }
                cursor = entry.pointee.ai_next
            }
            return addresses
        }
    }

    /// Reads a whole file off the loop.
    package static func readFile(_ path: String) async throws -> [UInt8] {
        try await run {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SystemError.last("open \(path)") }
            defer { close(fd) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw SystemError.last("read \(path)")
                }
                if count == 0 { break }
                bytes.append(contentsOf: chunk[0..<count])
            }
            return bytes
        }
    }
}
