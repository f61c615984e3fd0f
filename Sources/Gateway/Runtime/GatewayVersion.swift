/// The gateway's version, printed by `moya-gateway --version` and sent in `Via`.
public enum GatewayVersion {
    public static let current = "0.1.0"
}
