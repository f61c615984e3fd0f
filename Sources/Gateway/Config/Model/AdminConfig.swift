/// `admin`: the listener of the admin endpoints (`/metrics`, `/healthz`, `/readyz`).
package struct AdminConfig: Sendable, Equatable {
    /// Default `127.0.0.1:9090`.
    package var listen = ListenAddress(host: "127.0.0.1", port: 9090)

    package init() {}
}
