import HTTPWire
import Locking
import NetCore
import Synchronization

/// An HTTP/1.1 and HTTP/2 server (cleartext and TLS) over the package's own event loops.
///
/// With ``Configuration/http2`` on, TLS listeners offer ALPN `h2` and cleartext listeners accept HTTP/2 with prior
/// knowledge (a connection starting with the HTTP/2 preface); everything else is served as HTTP/1.1.
///
/// Every loop of the group gets its own `SO_REUSEPORT` listener per address, so accepted connections stay on the loop
/// that accepted them, and handlers run on that loop too.
package final class HTTPServer: Sendable {
    /// What to listen on and how.
    package struct Configuration: Sendable {
        /// Cleartext listeners (`127.0.0.1:8080`, `[::1]:8080`; port 0 picks a free port).
        package var listen: [SocketAddress]
        /// TLS listeners, served with ``tls``.
        package var tlsListen: [SocketAddress]
        package var tls: TLSServerConfiguration?
        package var limits: HTTPServerLimits
        /// Serve HTTP/2: ALPN `h2` (preferred over `http/1.1`) on TLS, prior knowledge (h2c) on cleartext.
        package var http2: Bool
        /// Settings and abuse limits of every HTTP/2 connection (its request cap is the lower of
        /// ``HTTP2Settings/maxRequestsPerConnection`` and ``HTTPServerLimits/maxRequestsPerConnection``).
        package var http2Settings: HTTP2Settings
        /// Response compression (gzip/deflate chosen from the request's `Accept-Encoding`) for every handler's
        /// responses, over HTTP/1.1 and HTTP/2; nil sends bodies as the handler made them.
        package var compression: CompressionPolicy?
        /// What the server reports as it happens (minimum-rate cuts, accepts that failed), for its owner's metrics.
        package var events: HTTPServerEvents

        package init(
            listen: [SocketAddress], tlsListen: [SocketAddress] = [], tls: TLSServerConfiguration? = nil,
            limits: HTTPServerLimits = HTTPServerLimits(), http2: Bool = true,
            http2Settings: HTTP2Settings = HTTP2Settings(), compression: CompressionPolicy? = nil,
            events: HTTPServerEvents = HTTPServerEvents()
        ) {
            self.events = events
            self.listen = listen
            self.tlsListen = tlsListen
            self.tls = tls
            self.limits = limits
            self.http2 = http2
            self.http2Settings = http2Settings
            self.compression = compression
        }

        /// The TLS settings used for the listeners: ALPN `h2` first when HTTP/2 is on, never `h2` when it is off,
        /// and always `http/1.1`.
        var effectiveTLS: TLSServerConfiguration? { tls.map(effective) }

        /// `tls` with the ALPN protocols the listeners offer (see ``effectiveTLS``).
        func effective(_ tls: TLSServerConfiguration) -> TLSServerConfiguration {
            var tls = tls
            var protocols = tls.alpnProtocols.filter { $0 != "h2" }
            if !protocols.contains("http/1.1") { protocols.append("http/1.1") }
            if http2 { protocols.insert("h2", at: 0) }
            tls.alpnProtocols = protocols
            return tls
        }
    }

    package let configuration: Configuration
    package let group: EventLoopGroup
    private let contexts: [UncheckedSendable<HTTPServerLoopContext>]
    private let openConnectionCount: AtomicCounter
    private let bound = Locked<(cleartext: [SocketAddress], tls: [SocketAddress])>(([], []))

    package init(configuration: Configuration, group: EventLoopGroup, handler: any HTTPServerHandler) {
        self.configuration = configuration
        self.group = group
        let compressor = configuration.compression.map(ResponseCompressor.init(policy:))
        let openConnectionCount = AtomicCounter()
        self.openConnectionCount = openConnectionCount
        var contexts: [UncheckedSendable<HTTPServerLoopContext>] = []
        let handshakeTimeout = configuration.tls?.handshakeTimeout ?? .seconds(10)
        for loop in group.loops {
            contexts.append(
                UncheckedSendable(
                    HTTPServerLoopContext(
                        loop: loop, handler: handler, compressor: compressor, limits: configuration.limits,
                        handshakeTimeout: handshakeTimeout,
                        http2: configuration.http2, http2Settings: configuration.http2Settings,
                        events: configuration.events, openConnections: openConnectionCount)))
        }
        self.contexts = contexts
    }

    /// Replaces the limits (a configuration reload): timeouts and counts apply to open connections from their next
    /// check, sizes of the request head to connections opened from now on.
    package func update(limits: HTTPServerLimits) {
        for context in contexts {
            context.value.loop.execute { context.value.limits = limits }
        }
    }

    /// Replaces the certificates (a configuration reload, a renewed certificate): the files are loaded now, and new
    /// handshakes on the TLS listeners use them once each loop has taken them; open connections keep theirs. The
    /// ALPN protocols stay as ``Configuration/http2`` says, and the handshake timeout as it was at start.
    /// - Throws: ``NetCore/TLSError`` (the files do not load, the key does not match, the certificate has expired):
    ///   nothing changes.
    package func update(tls: TLSServerConfiguration) throws {
        let context = try TLSContext(server: configuration.effective(tls))
        for loopContext in contexts {
            loopContext.value.loop.execute {
                if loopContext.value.tlsContext != nil { loopContext.value.tlsContext = context }
            }
        }
    }

    /// A server released without ``shutdown(timeout:)`` closes its listeners and connections on their loops.
    deinit {
        for context in contexts {
            context.value.loop.execute { context.value.closeAll() }
        }
    }

    /// The cleartext addresses actually bound (ports resolved when 0 was asked for).
    package var localAddresses: [SocketAddress] { bound.withLock { $0.cleartext } }
    /// The TLS addresses actually bound.
    package var tlsLocalAddresses: [SocketAddress] { bound.withLock { $0.tls } }
    /// Connections open right now, across loops.
    package var openConnections: Int { openConnectionCount.value }

    /// Binds every listener on every loop. Fails (with nothing left bound) when an address cannot be bound or the TLS
    /// files are unusable.
    package func start() async throws {
        let tlsContext = try configuration.effectiveTLS.map { try TLSContext(server: $0) }
        var cleartext: [SocketAddress] = []
        var secure: [SocketAddress] = []
        do {
            for address in configuration.listen { cleartext.append(try await bindOnAllLoops(address, tls: nil)) }
            if !configuration.tlsListen.isEmpty, let tlsContext {
                for address in configuration.tlsListen {
                    secure.append(try await bindOnAllLoops(address, tls: tlsContext))
                }
            }
        } catch {
            await forceClose()
            throw error
        }
        bound.withLock { $0 = (cleartext, secure) }
    }

    /// Binds `address` on the first loop (failing when anyone listens there), then the same resolved port on the others.
    private func bindOnAllLoops(_ address: SocketAddress, tls: TLSContext?) async throws -> SocketAddress {
        var resolved = address
        let tlsBox = UncheckedSendable(tls)
        for (index, context) in contexts.enumerated() {
            let target = resolved
            resolved = try await onLoop(context.value.loop) {
                try context.value.listen(on: target, tls: tlsBox.value, joiningOwnListener: index > 0)
            }
        }
        return resolved
    }

    private func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            loop.execute { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Graceful shutdown: stop accepting, let in-flight requests finish (responses get `Connection: close`), close
    /// idle connections; after `timeout` close whatever is left.
    package func shutdown(timeout: Duration) async {
        let finished = Atomic<Int>(0)
        let total = contexts.count
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumed = Atomic<Bool>(false)
            let resumeOnce: @Sendable () -> Void = {
                if !resumed.exchange(true, ordering: .acquiringAndReleasing) { continuation.resume() }
            }
            for context in contexts {
                context.value.loop.execute {
                    context.value.drain {
                        if finished.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue == total { resumeOnce() }
                    }
                }
            }
            if let first = contexts.first {
                first.value.loop.execute {
                    first.value.loop.schedule(after: timeout) { resumeOnce() }
                }
            }
        }
        await forceClose()
    }

    private func forceClose() async {
        for context in contexts {
            _ = try? await onLoop(context.value.loop) { context.value.closeAll() }
        }
    }
}
