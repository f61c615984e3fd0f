import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The built-in plugins on the transport lane (see `TransportPlugin`): each `prepare` below has the effect of the
// plugin's `URLRequest` one.

extension AccessTokenPlugin: PreparingTransportPlugin {
    package func prepare(_ request: inout TransportRequest, target: TargetType) {
        guard let authorizable = target as? AccessTokenAuthorizable,
            let authorizationType = authorizable.authorizationType
        else {
            return
        }
        let realTarget = (target as? MultiTarget)?.target ?? target
        let value = authorizationType.value + " " + tokenClosure(realTarget)
        // `URLRequest.addValue` joins a second value to the first with ", ".
        if let existing = request.http.headers.first(name: "Authorization") {
            request.http.headers.replaceOrAdd(name: "Authorization", value: existing + ", " + value)
        } else {
            request.http.headers.add(name: "Authorization", value: value)
        }
    }
}

extension CredentialsPlugin: TransportPlugin {
    package func prepare(_ request: inout TransportRequest, target: TargetType) {
        guard preemptive, !request.http.headers.contains(name: "Authorization"),
            let credential = credentialsClosure(target), let user = credential.user, let password = credential.password
        else {
            return
        }
        request.http.headers.add(
            name: "Authorization", value: AuthenticationChallenge.basicAuthorization(user: user, password: password))
    }
}

extension NetworkActivityPlugin: TransportPlugin {
    package func prepare(_ request: inout TransportRequest, target: TargetType) {}
}

extension NetworkLoggerPlugin: TransportPlugin {
    package func prepare(_ request: inout TransportRequest, target: TargetType) {}
}
