/// How a provider sends a request without building a `URLRequest` (see
/// `MoyaProvider.init(endpointClosure:requestClosure:stubClosure:session:plugins:trackInflights:transportMapping:)`).
package struct TransportLane: @unchecked Sendable {
    /// The request for an endpoint: nil when the endpoint needs the `URLRequest` path (multipart, files, encodings the
    /// mapping does not make), a failure when it cannot be sent.
    package typealias Mapping = (Endpoint) -> Result<TransportRequest, MoyaError>?

    let mapping: Mapping
    /// The provider's plugins, in order.
    let plugins: [TransportPlugin]
    /// Whether every plugin only prepares requests (see ``PreparingTransportPlugin``).
    let onlyPrepares: Bool

    /// A lane for these plugins and session, or nil when one of them needs the `URLRequest` path (a plugin without a
    /// transport `prepare`, a retrier or adapter without a transport form, a session that follows redirects or has an
    /// interceptor).
    init?(mapping: @escaping Mapping, plugins: [PluginType], session: Session) {
        guard case .doNotFollow = session.redirectHandler.behavior, session.interceptor == nil else { return nil }
        var transportPlugins: [TransportPlugin] = []
        for plugin in plugins {
            guard let transportPlugin = plugin as? TransportPlugin else { return nil }
            if plugin is RequestRetrier && !(plugin is TransportRetrier) { return nil }
            if plugin is RequestAdapter && !(plugin is TransportAdapter) { return nil }
            transportPlugins.append(transportPlugin)
        }
        self.mapping = mapping
        self.plugins = transportPlugins
        onlyPrepares = plugins.allSatisfy { $0 is PreparingTransportPlugin }
    }
}
