DROP TABLE webhook_cursor;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
