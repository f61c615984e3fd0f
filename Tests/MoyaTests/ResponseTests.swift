import Foundation
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct ResponseTests {
    func response(_ json: String, status: Int = 200) -> Response {
        Response(statusCode: status, data: Data(json.utf8))
    }

    @Test func dataSharingAnArrayHoldsItsBytesAfterTheArrayIsGone() {
        var data: Data
        do {
            let bytes = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            data = Data(sharing: bytes)
        }
        #expect(data.count == 4096 && data.first == 0 && data[4095] == UInt8(truncatingIfNeeded: 4095 &* 7))
        data[0] = 9
        #expect(data[0] == 9, "mutating copies: the array's storage is never written through")
        #expect(Data(sharing: [1, 2, 3]) == Data([1, 2, 3]) && Data(sharing: []).isEmpty)
    }

    @Test func responsesMadeByCallersHaveNoTransportBody() {
        #expect(response("{}").transportBody == nil)
    }

    struct User: Decodable, Equatable {
        let login: String
        let id: Int
    }
    struct OptionalIssue: Decodable, Equatable {
        let title: String?
        let createdAt: String?
    }

    @Test func description() {
        #expect(response("abc", status: 201).description == "Status Code: 201, Data Length: 3")
        #expect(response("abc").debugDescription == "Status Code: 200, Data Length: 3")
    }

    @Test func equalityIgnoresRequest() {
        let a = Response(statusCode: 200, data: Data("x".utf8), request: URLRequest(url: URL(string: "https://a")!))
        let b = Response(statusCode: 200, data: Data("x".utf8), request: nil)
        #expect(a == b)
        #expect(a != Response(statusCode: 201, data: Data("x".utf8)))
    }

    @Test func filters() throws {
        #expect(throws: Never.self) { try response("", status: 204).filterSuccessfulStatusCodes() }
        #expect(throws: MoyaError.self) { try response("", status: 301).filterSuccessfulStatusCodes() }
        #expect(throws: Never.self) { try response("", status: 301).filterSuccessfulStatusAndRedirectCodes() }
        #expect(throws: MoyaError.self) { try response("", status: 404).filterSuccessfulStatusAndRedirectCodes() }
        #expect(throws: Never.self) { try response("", status: 404).filter(statusCode: 404) }
        #expect(throws: MoyaError.self) { try response("", status: 404).filter(statusCodes: 200..<300) }
        do {
            _ = try response("", status: 500).filter(statusCode: 200)
        } catch let error as MoyaError {
            #expect(error.response?.statusCode == 500)
            if case .statusCode = error {} else { Issue.record("wrong case") }
        }
    }

    @Test func mapJSON() throws {
        let json = try response(#"{"a":[1,2]}"#).mapJSON() as? [String: Any]
        #expect((json?["a"] as? [Int]) == [1, 2])
        #expect(try response("12").mapJSON() as? Int == 12)
        #expect(throws: MoyaError.self) { try response("").mapJSON() }
        #expect(try response("").mapJSON(failsOnEmptyData: false) is NSNull)
        #expect(throws: MoyaError.self) { try response("{bad").mapJSON(failsOnEmptyData: false) }
    }

    @Test func mapString() throws {
        #expect(try response("hello").mapString() == "hello")
        #expect(try response(#"{"a":{"b":"deep"}}"#).mapString(atKeyPath: "a.b") == "deep")
        #expect {
            try response(#"{"a":{"b":1}}"#).mapString(atKeyPath: "a.b")
        } throws: { error in
            if case MoyaError.stringMapping = error { return true }
            return false
        }
        #expect {
            try response("not json").mapString(atKeyPath: "a")
        } throws: { error in
            if case MoyaError.jsonMapping = error { return true }
            return false
        }
        #expect(throws: MoyaError.self) { try Response(statusCode: 200, data: Data([0xff, 0xfe])).mapString() }
    }

    @Test func mapDecodable() throws {
        #expect(try response(#"{"login":"m","id":1}"#).map(User.self) == User(login: "m", id: 1))
        #expect(
            try response(#"{"data":{"user":{"login":"m","id":1}}}"#).map(User.self, atKeyPath: "data.user")
                == User(login: "m", id: 1))
        #expect(
            try response(#"{"data":[{"login":"m","id":1}]}"#).map([User].self, atKeyPath: "data") == [
                User(login: "m", id: 1)
            ])
        #expect(try response(#"{"count":3}"#).map(Int.self, atKeyPath: "count") == 3)
        #expect(try response(#"{"name":"x"}"#).map(String.self, atKeyPath: "name") == "x")
        #expect(try response(#"{"v":null}"#).map(Int?.self, atKeyPath: "v") == nil)
    }

    @Test func mapDecodableErrorsCarryTheResponse() {
        let bad = response(#"{"login":1}"#)
        do {
            _ = try bad.map(User.self)
            Issue.record("expected failure")
        } catch let error as MoyaError {
            if case .objectMapping(_, let r) = error { #expect(r === bad) } else { Issue.record("wrong case \(error)") }
        } catch {
            Issue.record("not a MoyaError")
        }
        #expect {
            try response(#"{"a":1}"#).map(User.self, atKeyPath: "missing")
        } throws: { error in
            if case MoyaError.jsonMapping = error { return true }
            return false
        }
    }

    @Test func mapEmptyData() throws {
        #expect(
            try response("").map(OptionalIssue.self, failsOnEmptyData: false)
                == OptionalIssue(title: nil, createdAt: nil))
        #expect(
            try response("").map([OptionalIssue].self, failsOnEmptyData: false) == [
                OptionalIssue(title: nil, createdAt: nil)
            ])
        #expect(throws: MoyaError.self) { try response("").map(OptionalIssue.self) }
    }

    @Test func keyPathLookup() {
        let object: [String: Any] = ["a": ["b": ["c": 1]]]
        #expect(KeyPathLookup.value(in: object, atKeyPath: "a.b.c") as? Int == 1)
        #expect(KeyPathLookup.value(in: object, atKeyPath: "a.x") == nil)
        #expect(KeyPathLookup.value(in: object, atKeyPath: "a.b.c.d") == nil)
    }
}

@Suite struct MoyaErrorTests {
    let response = Response(statusCode: 404, data: Data())
    let underlying = NSError(
        domain: "Test", code: 1, userInfo: [NSLocalizedDescriptionKey: "Houston, we have a problem"])

    @Test func descriptions() {
        #expect(MoyaError.imageMapping(response).errorDescription == "Failed to map data to an Image.")
        #expect(MoyaError.jsonMapping(response).errorDescription == "Failed to map data to JSON.")
        #expect(MoyaError.stringMapping(response).errorDescription == "Failed to map data to a String.")
        #expect(
            MoyaError.objectMapping(underlying, response).errorDescription
                == "Failed to map data to a Decodable object.")
        #expect(
            MoyaError.encodableMapping(underlying).errorDescription == "Failed to encode Encodable object into data.")
        #expect(MoyaError.statusCode(response).errorDescription == "Status code didn't fall within the given range.")
        #expect(MoyaError.underlying(underlying, nil).errorDescription == "Houston, we have a problem")
        #expect(MoyaError.requestMapping("x").errorDescription == "Failed to map Endpoint to a URLRequest.")
        #expect(
            MoyaError.parameterEncoding(underlying).errorDescription
                == "Failed to encode parameters for URLRequest. Houston, we have a problem")
        #expect(MoyaError.jsonMapping(response).localizedDescription == "Failed to map data to JSON.")
    }

    @Test func responses() {
        #expect(MoyaError.jsonMapping(response).response === response)
        #expect(MoyaError.underlying(underlying, response).response === response)
        #expect(MoyaError.underlying(underlying, nil).response == nil)
        #expect(MoyaError.requestMapping("x").response == nil)
        #expect(MoyaError.parameterEncoding(underlying).response == nil)
        #expect(MoyaError.encodableMapping(underlying).response == nil)
    }

    @Test func userInfo() {
        let info = MoyaError.underlying(underlying, nil).errorUserInfo
        #expect(info[NSLocalizedDescriptionKey] as? String == "Houston, we have a problem")
        #expect((info[NSUnderlyingErrorKey] as? NSError)?.code == 1)
        #expect(MoyaError.jsonMapping(response).errorUserInfo[NSUnderlyingErrorKey] == nil)
    }
}

@Suite struct ValidationTypeTests {
    @Test func statusCodes() {
        #expect(ValidationType.none.statusCodes == [])
        #expect(ValidationType.successCodes.statusCodes == Array(200..<300))
        #expect(ValidationType.successAndRedirectCodes.statusCodes == Array(200..<400))
        #expect(ValidationType.customCodes([200, 418]).statusCodes == [200, 418])
    }

    @Test func equality() {
        #expect(ValidationType.customCodes([1]) == .customCodes([1]))
        #expect(ValidationType.customCodes([1]) != .customCodes([2]))
        #expect(ValidationType.none != .successCodes)
    }
}

@Suite struct MultiTargetTests {
    @Test func forwardsEverything() {
        let inner = TestTarget(
            path: "/p", method: .put, sampleData: Data("s".utf8), headers: ["h": "v"],
            validationType: .successCodes, authorizationType: .bearer)
        let multi = MultiTarget(inner)
        #expect(multi.path == "/p")
        #expect(multi.baseURL == inner.baseURL)
        #expect(multi.method == .put)
        #expect(multi.sampleData == Data("s".utf8))
        #expect(multi.headers == ["h": "v"])
        #expect(multi.validationType == .successCodes)
        #expect(multi.authorizationType == .bearer)
        #expect(MultiTarget(GitHub.zen).authorizationType == nil)
        if case .requestPlain = multi.task {} else { Issue.record("task not forwarded") }
        #expect((multi.target as? TestTarget)?.path == "/p")
    }

    @Test func methodSupportsMultipart() {
        #expect(Moya.Method.post.supportsMultipart)
        #expect(Moya.Method.put.supportsMultipart)
        #expect(Moya.Method.patch.supportsMultipart)
        #expect(Moya.Method.connect.supportsMultipart)
        #expect(!Moya.Method.get.supportsMultipart)
        #expect(!Moya.Method.delete.supportsMultipart)
        #expect(Moya.Method.get.rawValue == "GET")
    }
}
