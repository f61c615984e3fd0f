import Foundation
import Moya
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Alamofire's `HTTPHeaders` as Moya users write it: session set-up from Moya's documentation, and the collection's
/// case-insensitive semantics.
@Suite struct MoyaHTTPHeadersTests {
    /// Moya's `defaultAlamofireSession()`, as its documentation shows it for a custom session.
    @Test func theDocumentedCustomSessionCompilesAndCarriesTheDefaultHeaders() {
        let configuration = URLSessionConfiguration.default
        configuration.headers = .default
        let session = Session(configuration: configuration, startRequestsImmediately: false)
        #expect(session.headers == Session.defaultHTTPHeaders)
        #expect(session.startRequestsImmediately == false)
        #expect(configuration.headers.value(for: "user-agent") == Session.defaultUserAgent)
    }

    @Test func namesAreCaseInsensitiveAndUpdatesReplaceInPlace() {
        var headers: HTTPHeaders = ["Accept": "text/plain", "X-One": "1"]
        headers.add(name: "accept", value: "application/json")
        headers.update(.authorization(bearerToken: "t0ken"))
        headers["x-two"] = "2"
        #expect(headers.count == 4)
        #expect(headers["ACCEPT"] == "application/json")
        #expect(headers.value(for: "authorization") == "Bearer t0ken")
        headers["X-ONE"] = nil
        headers.remove(name: "x-two")
        #expect(headers.dictionary == ["accept": "application/json", "Authorization": "Bearer t0ken"])
        #expect(headers.map(\.name) == ["accept", "Authorization"], "first position, latest spelling (as Alamofire)")
    }

    @Test func constructorsSortingAndDescription() {
        let headers: HTTPHeaders = [
            .userAgent("ua"), .authorization(username: "user", password: "pass"), .contentType("text/csv")
        ]
        #expect(headers["Authorization"] == "Basic dXNlcjpwYXNz")
        #expect(headers.sorted().map(\.name) == ["Authorization", "Content-Type", "User-Agent"])
        #expect(
            headers.sorted().description == "Authorization: Basic dXNlcjpwYXNz\nContent-Type: text/csv\nUser-Agent: ua")
        #expect(HTTPHeaders([.accept("a"), .accept("b")]) == HTTPHeaders(["Accept": "b"]), "a later duplicate wins")
        #expect(HTTPHeaders.default.map(\.name) == ["Accept-Encoding", "Accept-Language", "User-Agent"])
    }

    @Test func requestsAndResponsesExposeTheirHeaders() throws {
        let url = try #require(URL(string: "https://example.com/"))
        var request = URLRequest(url: url)
        request.headers = [.accept("application/json")]
        request.headers.add(.contentType("application/json"))
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        let response = try #require(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: ["ETag": "\"v1\""]))
        #expect(response.headers["etag"] == "\"v1\"")
    }
}
