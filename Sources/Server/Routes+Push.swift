import Hummingbird
import Projections

/// `PUT /v1/me/devices/{device}`: the device's push service, app and token.
struct DeviceBody: Decodable {
    var platform: PushPlatform
    var token: String
    var appID: String
}

/// `PUT /v1/me/push-settings`.
struct PushSettingsBody: Decodable { var hidePreviews: Bool }

extension API {
    /// Devices, muted rooms and push settings: each the caller's own.
    func registerPushCommands(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .put, path: "/v1/me/devices/:device", operation: "registerDevice",
                summary:
                    "Register one's device for push notifications, or give it a new token: the device id is the "
                    + "client's own (a UUID it keeps); the token is personal data, sealed and forgotten with the user.",
                access: .user, body: "DeviceBody", status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let device = DeviceID(try context.parameters.id("device"))
            return try await command(request, context) { user, body in
                let b = try JSONBody.decode(DeviceBody.self, from: body)
                return Answers.position(
                    try await engine.registerDevice(
                        device, of: user, platform: b.platform, appID: b.appID, token: b.token))
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/me/devices/:device", operation: "removeDevice",
                summary: "Remove one's device: nothing is pushed to it any more.", access: .user, status: 200,
                response: "PositionResult", idempotent: true)
        ) { request, context in
            let device = DeviceID(try context.parameters.id("device"))
            return try await command(request, context) { user, _ in
                Answers.position(try await engine.removeDevice(device, of: user))
            }
        }
        t.add(
            RouteSpec(
                method: .put, path: "/v1/me/push-settings", operation: "setPushSettings",
                summary: "Choose whether one's notifications show a preview of what was said.", access: .user,
                body: "PushSettingsBody", status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            try await command(request, context) { user, body in
                let b = try JSONBody.decode(PushSettingsBody.self, from: body)
                return Answers.position(try await engine.setHidesPreviews(b.hidePreviews, user: user))
            }
        }
        for muted in [true, false] {
            t.add(
                RouteSpec(
                    method: muted ? .put : .delete, path: "/v1/rooms/:room/mute",
                    operation: muted ? "muteRoom" : "unmuteRoom",
                    summary: muted
                        ? "Mute a room: its messages push nothing to oneself." : "Unmute a room.",
                    access: .user, status: 200, response: "PositionResult", idempotent: true)
            ) { request, context in
                let room = RoomID(try context.parameters.id("room"))
                return try await command(request, context) { user, _ in
                    try requireMember(user, room)
                    return Answers.position(try await engine.setMuted(muted, room: room, user: user))
                }
            }
        }
    }
}
