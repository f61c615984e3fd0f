import Foundation
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct URLEncodingTests {
    let base = URLRequest(url: URL(string: "https://example.com/a")!)

    func query(_ parameters: Parameters, _ encoding: URLEncoding = .queryString) throws -> String? {
        try encoding.encode(base, with: parameters).url?.query
    }

    @Test func sortsTopLevelKeysAndEncodesNested() throws {
        let parameters: Parameters = ["b": "2", "a": "1", "c": ["z": 1, "y": ["x": true]]]
        #expect(try query(parameters) == "a=1&b=2&c%5By%5D%5Bx%5D=1&c%5Bz%5D=1")
    }

    @Test func arrayEncodings() throws {
        let parameters: Parameters = ["ids": [1, 2]]
        #expect(try query(parameters) == "ids%5B%5D=1&ids%5B%5D=2")
        #expect(
            try query(parameters, URLEncoding(destination: .queryString, arrayEncoding: .noBrackets)) == "ids=1&ids=2")
        #expect(
            try query(parameters, URLEncoding(destination: .queryString, arrayEncoding: .indexInBrackets))
                == "ids%5B0%5D=1&ids%5B1%5D=2")
        #expect(
            try query(parameters, URLEncoding(destination: .queryString, arrayEncoding: .custom({ "\($0).\($1)" })))
                == "ids.0=1&ids.1=2")
    }

    @Test func boolEncodings() throws {
        #expect(try query(["t": true, "f": false]) == "f=0&t=1")
        #expect(
            try query(["t": true, "f": false], URLEncoding(destination: .queryString, boolEncoding: .literal))
                == "f=false&t=true")
        #expect(try query(["n": NSNumber(value: true)]) == "n=1")
        #expect(try query(["i": 1, "d": 1.5]) == "d=1.5&i=1")
    }

    @Test func escapingAsAlamofire() throws {
        #expect(try query(["k": "a b&c[]/?"]) == "k=a%20b%26c%5B%5D/?")
        #expect(try query(["k": ":#[]@!$&'()*+,;="]) == "k=%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D")
        #expect(try query(["ü": "é"]) == "%C3%BC=%C3%A9")
    }

    @Test func appendsToExistingQuery() throws {
        let request = URLRequest(url: URL(string: "https://example.com/a?x=1")!)
        #expect(
            try URLEncoding.queryString.encode(request, with: ["y": "2"]).url?.absoluteString
                == "https://example.com/a?x=1&y=2")
        #expect(
            try URLEncoding.queryString.encode(request, with: [:]).url?.absoluteString == "https://example.com/a?x=1")
    }

    @Test func methodDependentDestination() throws {
        for method in ["GET", "HEAD", "DELETE"] {
            var request = base
            request.httpMethod = method
            let encoded = try URLEncoding.default.encode(request, with: ["a": "1"])
            #expect(encoded.url?.query == "a=1")
            #expect(encoded.httpBody == nil)
        }
        var post = base
        post.httpMethod = "POST"
        let encoded = try URLEncoding.default.encode(post, with: ["b": "x y", "a": "1"])
        #expect(encoded.url?.query == nil)
        #expect(encoded.httpBody?.utf8String == "a=1&b=x%20y")
        #expect(encoded.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded; charset=utf-8")
    }

    @Test func httpBodyWithEmptyParametersSetsHeader() throws {
        let encoded = try URLEncoding.httpBody.encode(base, with: [:])
        #expect(encoded.httpBody == Data())
        #expect(encoded.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded; charset=utf-8")
    }

    @Test func keepsExistingContentType() throws {
        var request = base
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        #expect(
            try URLEncoding.httpBody.encode(request, with: ["a": 1]).value(forHTTPHeaderField: "Content-Type")
                == "text/plain")
    }

    @Test func nilParametersLeaveRequestAlone() throws {
        let encoded = try URLEncoding.httpBody.encode(base, with: nil)
        #expect(encoded.httpBody == nil)
        #expect(encoded.value(forHTTPHeaderField: "Content-Type") == nil)
    }

    @Test func staticsAndProperties() {
        #expect(URLEncoding.default.destination == .methodDependent)
        #expect(URLEncoding.queryString.destination == .queryString)
        #expect(URLEncoding.httpBody.destination == .httpBody)
    }
}

@Suite struct JSONEncodingTests {
    let base = URLRequest(url: URL(string: "https://example.com/a")!)

    @Test func encodesSortedWithContentType() throws {
        let encoded = try JSONEncoding.default.encode(base, with: ["b": 1, "a": ["y": true, "x": "s"]])
        #expect(encoded.httpBody?.utf8String == #"{"a":{"x":"s","y":true},"b":1}"#)
        #expect(encoded.value(forHTTPHeaderField: "Content-Type") == "application/json")
    }

    @Test func keepsContentType() throws {
        var request = base
        request.setValue("application/vnd.api+json", forHTTPHeaderField: "Content-Type")
        #expect(
            try JSONEncoding.default.encode(request, with: ["a": 1]).value(forHTTPHeaderField: "Content-Type")
                == "application/vnd.api+json")
    }

    @Test func invalidObjectThrows() {
        #expect(throws: ParameterEncodingFailure.self) {
            try JSONEncoding.default.encode(base, with: ["date": Date()])
        }
    }
}

/// A user-defined encoding, as Moya's tests have (PropertyListEncoding).
struct PropertyListEncoding: ParameterEncoding {
    func encode(_ urlRequest: URLRequestConvertible, with parameters: Parameters?) throws -> URLRequest {
        var request = try urlRequest.asURLRequest()
        guard let parameters else { return request }
        request.httpBody = try PropertyListSerialization.data(fromPropertyList: parameters, format: .xml, options: 0)
        request.setValue("application/x-plist", forHTTPHeaderField: "Content-Type")
        return request
    }
}

@Suite struct CustomEncodingTests {
    @Test func customEncodingPlugsIn() throws {
        let endpoint = Endpoint(
            url: "https://example.com", sampleResponseClosure: { .networkResponse(200, Data()) },
            method: .post, task: .requestParameters(parameters: ["a": "b"], encoding: PropertyListEncoding()),
            httpHeaderFields: nil)
        let request = try endpoint.urlRequest()
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/x-plist")
        let plist =
            try PropertyListSerialization.propertyList(from: request.httpBody ?? Data(), format: nil)
            as? [String: String]
        #expect(plist == ["a": "b"])
    }
}
