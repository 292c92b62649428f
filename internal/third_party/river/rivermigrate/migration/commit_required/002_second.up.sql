ALTER TYPE /* TEMPLATE: schema */foobar ADD VALUE 'baz' AFTER 'bar';
