package httpapi

// storeRoutes are the store sales' routes (issue 23): the receivers the stores call, and
// the owner's connections, product mappings and orders.
func storeRoutes(h *storeHandlers) []section {
	conn := props("id!:string", "appId!:string", "provider!:string", "name!:string", "receiverPath!:string", "hasSecret!:boolean",
		"refundAction!:string", "enabled!:boolean", "mailSubject!:string", "mailBody!:string", "portal!:object", "createdAt!:string?", "updatedAt!:string?")
	connBody := props("provider:string", "name:string", "secret:string", "refundAction:string", "enabled:boolean", "mailSubject:string", "mailBody:string", "portal:object")
	product := props("id!:string", "connectionId!:string", "productId!:string", "variantId!:string", "level!:integer", "duration!:integer",
		"maxUses!:integer", "deviceLimit!:integer", "maxSeats!:integer", "keyPrefix!:string", "createUser!:boolean", "variables!:object")
	productBody := props("productId!:string", "variantId:string", "level:integer", "duration:integer", "maxUses:integer", "deviceLimit:integer",
		"maxSeats:integer", "keyPrefix:string", "createUser:boolean", "variables:object")
	order := props("id!:string", "connectionId!:string", "orderId!:string", "subscriptionId!:string", "productRef!:string", "status!:string",
		"email!:string", "quantity!:integer", "amount!:integer", "currency!:string", "licenseIds!:strings", "keys!:strings",
		"paidThrough!:string?", "periodEnd!:string?", "createdAt!:string?", "updatedAt!:string?")
	event := props("id!:string", "eventId!:string", "type!:string", "kind!:string", "outcome!:string", "payload!:string",
		"payloadBase64!:boolean", "receivedAt!:string?")
	orderList := props("orders!:object[]", "total!:integer", "limit!:integer", "offset!:integer")
	orderList["properties"].(obj)["orders"] = obj{"type": "array", "items": order}
	orderDetail := props("order:object?", "events!:object[]")
	orderDetail["properties"].(obj)["order"] = nullable(order)
	orderDetail["properties"].(obj)["events"] = obj{"type": "array", "items": event}
	arrayOf := func(item obj) obj { return obj{"type": "array", "items": item} }

	return []section{
		// The stores call the receivers; the signature (or, for Gumroad, the receiver id
		// in the path) is the credential, checked by core/commerce.
		{tag: "Stores", access: accessOpen, rows: []row{
			{post, receiverPrefix + ":receiverId", scopePublic, notAudited, h.receive,
				op("A store's notification (Stripe, Paddle, Lemon Squeezy, Sellix, Shoppy, SellApp, Gumroad): a paid order issues its keys once; "+
					"SellApp's delivery answers the keys as text", obj{"type": "object"},
					props("outcome!:string", "duplicate!:boolean", "orderRef:string", "status:string"))},
			// Discord signs with Ed25519 (the app's Discord connection holds the public key).
			{post, "/api/discord/interactions/:receiverId", scopePublic, notAudited, h.discord,
				op("Discord's interactions endpoint: PING, /redeem, /license, /reset-hwid (answered in Discord's format)",
					obj{"type": "object"}, nil).answers("application/json")},
		}},
		{tag: "Stores", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/stores", "stores:read", notAudited, h.listConnections, op("Store connections", noBody, arrayOf(conn))},
			{post, "/api/apps/:appId/stores", "stores:create", auditCreate("stores"), h.createConnection,
				created("Connect a store (its receiver path is made here)", connBody, conn)},
			{get, "/api/apps/:appId/stores/:storeId", "stores:read", notAudited, h.getConnection, op("A store connection", noBody, conn)},
			{update, "/api/apps/:appId/stores/:storeId", "stores:update", auditUpdate("stores"), h.updateConnection,
				op("Change a store connection (secret, refund action, mail template, on/off)", connBody, conn)},
			{del, "/api/apps/:appId/stores/:storeId", "stores:delete", auditDelete("stores"), h.deleteConnection,
				op("Delete a store connection and its product mappings (its orders stay)", noBody, msgData)},
			{get, "/api/apps/:appId/stores/:storeId/products", "stores:read", notAudited, h.listProducts, op("The connection's product mappings", noBody, arrayOf(product))},
			{post, "/api/apps/:appId/stores/:storeId/products", "stores:update", auditCreate("stores"), h.putProduct,
				op("Map a store product (and variant) to a license template, replacing its mapping", productBody, product)},
			{del, "/api/apps/:appId/stores/:storeId/products/:productId", "stores:delete", auditDelete("stores"), h.deleteProduct,
				op("Delete a product mapping", noBody, msgData)},
			{get, "/api/apps/:appId/orders", "stores:read", notAudited, h.listOrders, op("Orders, newest first (query: limit, offset)", noBody, orderList)},
			{get, "/api/apps/:appId/orders/:orderId", "stores:read", notAudited, h.getOrder,
				op("An order with its events and their raw payloads (orderId unmatched: the events no order took)", noBody, orderDetail)},
			{get, "/api/apps/:appId/analytics/revenue", "analytics:read", notAudited, h.revenueOf,
				op("Store revenue per day, product mapping and currency, in minor units (query: days)", noBody,
					arrayOf(props("day!:string", "productRef!:string", "currency!:string", "amount!:integer", "orders!:integer", "renewals!:integer", "refunds!:integer")))},
			{post, "/api/apps/:appId/orders/:orderId/resend", "stores:update", auditCommand("stores"), h.resendOrder,
				op("Mail the order's keys to its buyer again", noBody, msgData)},
		}},
	}
}
