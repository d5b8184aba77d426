import FeedCore
import ViewModelHosting

/// Whether route rows' conditions hold for one matched path, the `{feed}`'s hosting looked up once.
struct RouteConditions {
    package let hosted: HostedFeeds?
    package let parameters: RouteParameters
    private var isHosted: Bool?
    private var host: (any HostedFeed)??

    package init(hosted: HostedFeeds?, parameters: RouteParameters) {
        self.hosted = hosted
        self.parameters = parameters
    }

    package mutating func hold(_ condition: Route.Condition) -> Bool {
        switch condition {
        case .always: true
        case .snapshotFeed: !feedIsHosted()
        case .viewModelFeed: feedIsHosted()
        case .patchable: feedHost()?.acceptsPatch ?? false
        case .action: feedHost()?.actionList.contains { $0.name == parameters["action"] } ?? false
        }
    }

    private mutating func feedIsHosted() -> Bool {
        if let isHosted { return isHosted }
        let answer = hosted?.isHosted(parameters["feed"]) ?? false
        isHosted = answer
        return answer
    }

    private mutating func feedHost() -> (any HostedFeed)? {
        if let host { return host }
        let answer = hosted?.hosted(parameters["feed"])
        host = .some(answer)
        return answer
    }
}
