DROP TYPE /* TEMPLATE: schema */foobar;
