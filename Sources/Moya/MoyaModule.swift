/// Moya: a network abstraction layer, re-built for Linux on MoyaGateway's own HTTP client.
enum MoyaModule {
    /// The Moya API level this module is compatible with.
    static let compatibleMoyaVersion = "15.0.3+master"
}
