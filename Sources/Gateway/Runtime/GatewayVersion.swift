/// The gateway's version, printed by `moya-gateway --version` and sent in `Via`.
package enum GatewayVersion {
    package static let current = "0.1.0"
}
