import Foundation
import HTTPServerCore
import HTTPWire

extension GatewayHandler {
    /// One request as it goes through the handler: its snapshot, id and access-log record. The request itself is
    /// passed beside it, borrowed: a copy costs a reference count per field.
    struct Exchange {
        let snapshot: GatewaySnapshot
        let requestID: String
        var record: AccessRecord
        /// When the request reached the handler.
        let started: ContinuousClock.Instant
        /// Set when the response body is relayed: the access-log line waits for the body's end.
        var relayLog: RelayedResponseLog?

        init(
            request: borrowing HTTPServerRequest, snapshot: GatewaySnapshot, generator: RequestIDGenerator,
            started: ContinuousClock.Instant
        ) {
            self.snapshot = snapshot
            self.started = started
            let head = request.head
            requestID = RequestID.take(from: head.headers.first(.xRequestId), generator: generator)
            record = AccessRecord(
                requestID: requestID, method: head.method.rawValue, path: head.target,
                bytesIn: Int(request.declaredBodyLength ?? 0))
            record.clientAddress = ClientAddress.of(
                peer: request.remoteAddress?.host, headers: head.headers,
                trusted: snapshot.config.server.trustedProxies)
            record.traceID = TraceContext.traceID(in: head.headers)
        }

        /// Who the request is for, as the upstream call needs it (two strings, not a copy of the whole exchange).
        var caller: Caller { Caller(requestID: requestID, clientAddress: record.clientAddress) }

        /// Notes the route (and the API-key client, once known) in the access-log record.
        mutating func note(_ routed: Admission.Routed) {
            record.route = routed.route.name
            record.upstream = routed.route.upstream.name
            record.upstreamPath = routed.upstreamPath
            record.routeMetrics = routed.runtime?.metrics
            if let client = routed.clientName { record.client = client }
        }
    }

    /// The caller of an upstream call: its request id and its address (see ``ClientAddress``).
    struct Caller {
        let requestID: String
        let clientAddress: String?
    }

    /// What a shared (coalesced) call's target takes from its ``CoalescingKey``.
    struct Sharing {
        /// The path and query sent upstream (see ``Call/sentPath(key:)``).
        let sentPath: String
        /// The flight's identity, sent in ``UpstreamProvider/flightHeader``.
        let flightKey: String

        init(key: CoalescingKey, call: Call) {
            sentPath = call.sentPath(key: key)
            flightKey = "\(key.hashValue)-\(key.identity)"
        }
    }

    /// An upstream call, all but its body decided. The request, its id and the client's address are passed in (not
    /// copied here: a copy of the request costs a reference count per field).
    struct Call {
        let route: CompiledRoute
        let upstream: UpstreamProvider
        let upstreamPath: String
        let clientName: String?
        let apiKeyHeader: String?

        /// The coalescing key, when this call may share an upstream call.
        func coalescingKey(for request: borrowing HTTPServerRequest) -> CoalescingKey? {
            let method = request.head.method
            guard route.config.coalesce && CoalescingKey.isCoalescible(method) else { return nil }
            return CoalescingKey.make(
                method: method, upstream: route.upstream.name,
                upstreamURL: upstream.origin + upstreamPath, varyHeaders: route.config.coalesceVary,
                requestHeaders: request.head.headers, clientName: clientName)
        }

        /// The path and query sent upstream: a shared call's query has its parameters sorted, as in its key, so that
        /// requests that differ only in parameter order share it and send the same request however they arrived.
        func sentPath(key: CoalescingKey) -> String {
            // The key's URL is `origin + upstreamPath` with the query sorted: its path part, without sorting again.
            guard key.url.utf8.count > upstream.origin.utf8.count else { return upstreamPath }
            return String(decoding: key.url.utf8.dropFirst(upstream.origin.utf8.count), as: UTF8.self)
        }

        /// The Moya target for this call. Without `forwardsHeaders` it carries no client or forwarding headers (for
        /// a stub that answers at once and logs no exchange: nobody would see them). A shared call (see
        /// ``Sharing``) is sent to its key's path with its flight key; the key itself is not passed: each test of an
        /// optional key copies it through its value witness.
        func target(
            for caller: Caller, request: borrowing HTTPServerRequest, body: [UInt8],
            streamedBody: UpstreamRequestBody? = nil, tunnel: WebSocketTunnel? = nil, sharing: Sharing? = nil,
            forwardsHeaders: Bool = true, stubAnswer: StubAnswer? = nil, stubDraw: StubDraw? = nil
        ) -> GatewayTarget {
            var (stable, perRequest) =
                forwardsHeaders
                ? upstreamHeaders(for: caller, request: request, shared: sharing != nil) : ([:], HTTPFields())
            if let tunnel { perRequest.replaceOrAdd(tunnel.upstreamFields) }
            return GatewayTarget(
                provider: upstream, origin: upstream.origin, upstreamTarget: sharing?.sentPath ?? upstreamPath,
                method: request.head.method,
                body: body.isEmpty ? Data() : Data(body), streamedBody: streamedBody, tunnel: tunnel,
                stableHeaders: stable,
                perRequestHeaders: perRequest,
                flightKey: sharing?.flightKey,
                timeout: route.config.timeout, retries: route.config.retries,
                callerKey: forwardsHeaders ? callerKey(for: caller) : nil, stubAnswer: stubAnswer, stubDraw: stubDraw)
        }

        /// ``target(for:request:body:streamedBody:tunnel:sharing:forwardsHeaders:stubAnswer:stubDraw:)`` out of line,
        /// for `respond`: inlined there, the target's deadline (a `ContinuousClock.Instant`, a resilient type sized at
        /// run time) made the async function's frame dynamic, a task allocation more per call. (`decide`, synchronous,
        /// keeps it inlined.)
        @inline(never)
        func sentTarget(
            for caller: Caller, request: borrowing HTTPServerRequest, body: [UInt8],
            streamedBody: UpstreamRequestBody?, tunnel: WebSocketTunnel?, sharing: Sharing?,
            stubAnswer: StubAnswer?, stubDraw: StubDraw?
        ) -> GatewayTarget {
            target(
                for: caller, request: request, body: body, streamedBody: streamedBody, tunnel: tunnel,
                sharing: sharing, stubAnswer: stubAnswer, stubDraw: stubDraw)
        }

        /// The caller as `rate_limit` keys it (the API client, else the client's address behind `trusted_proxies`, an
        /// IPv6 one by its /64), hashed (see ``CallerKey``): for the fair share of a full upstream pool.
        func callerKey(for caller: Caller) -> Int {
            if let clientName { return CallerKey.of(clientName, kind: 1) }
            return CallerKey.of(caller.clientAddress.map(ClientAddress.rateLimitKey) ?? "", kind: 2)
        }

        /// `string`, owned. `Forwarding` storing `request.remoteAddress?.host` directly copied the whole optional
        /// address through its value witnesses, twice; passed in borrowed, only the string is retained.
        @inline(never)
        private static func owned(_ string: String?) -> String? { string }

        /// The headers sent upstream: those that take part in a flight's identity, and this caller's own (all of
        /// them when the call is not shared).
        private func upstreamHeaders(for caller: Caller, request: borrowing HTTPServerRequest, shared: Bool)
            -> (stable: [String: String], perRequest: HTTPFields)
        {
            let head = request.head
            let forwarding = Forwarding(
                peer: Self.owned(request.remoteAddress?.host), clientAddress: caller.clientAddress,
                isTLS: request.isTLS, requestID: caller.requestID, version: head.version)
            return ProxyHeaders.upstreamHeaders(
                from: head.headers, apiKeyHeader: apiKeyHeader, configured: upstream.upstream.headers,
                dropAuthorization: upstream.injectsCredentials,
                varyHeaders: route.config.coalesceVary, coalescing: shared,
                forwarding: forwarding)
        }
    }
}
