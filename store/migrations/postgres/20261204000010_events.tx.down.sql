DROP TABLE event_recipients;
DROP TABLE events;
