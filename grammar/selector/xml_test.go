package selector

import "testing"

// orderXML is the WebLogic text's example document.
const orderXML = `<order>
       <item>
              <id>007</id>
              <name>Hand-held Power Drill</name>
              <description>Compact, assorted colors.</description>
              <price>$34.99</price>
       </item>
       <item>
              <id>123</id>
              <name>Mitre Saw</name>
              <description>Three blades sizes.</description>
              <price>$69.99</price>
       </item>
       <item>
              <id>66</id>
              <name>Socket Wrench Set</name>
              <description>Set of 10.</description>
              <price>$19.99</price>
       </item>
</order>`

// TestXMLSelector covers JMS_BEA_SELECT, the examples of WebLogic JMS
// "Managing Your Applications", "Defining XML Message Selectors Using XML
// Selector Method" first.
func TestXMLSelector(t *testing.T) {
	order := props("n", 3).withBody(orderXML)
	runEval(t, []evalCase{
		{"WebLogic example: mitre saw", "JMS_BEA_SELECT('xpath', '/order/item[2]/name/text()') = 'Mitre Saw'", order, True},
		{"WebLogic example: id 66", "JMS_BEA_SELECT('xpath', '/order/item[3]/id/text()') = '66'", order, True},
		{"other item", "JMS_BEA_SELECT('xpath', '/order/item[1]/name/text()') = 'Mitre Saw'", order, False},
		{"element value", "JMS_BEA_SELECT('xpath', '/order/item[2]/name') = 'Mitre Saw'", order, True},
		{"first of many", "JMS_BEA_SELECT('xpath', '//id') = '007'", order, True},
		{"predicate with doubled quotes", "JMS_BEA_SELECT('xpath', '/order/item[name=''Mitre Saw'']/id') = '123'", order, True},
		{"xpath in any case", "JMS_BEA_SELECT('XPATH', '/order/item[3]/id') = '66'", order, True},
		{"scalar count", "JMS_BEA_SELECT('xpath', 'count(/order/item)') = '3'", order, True},
		{"scalar string", "JMS_BEA_SELECT('xpath', 'string(/order/item[1]/price)') = '$34.99'", order, True},
		{"scalar boolean", "JMS_BEA_SELECT('xpath', 'count(/order/item) > 2') = 'true'", order, True},
		{"in list", "JMS_BEA_SELECT('xpath', '/order/item[3]/id') IN ('66', '67')", order, True},
		{"like", "JMS_BEA_SELECT('xpath', '/order/item[1]/name') LIKE 'Hand%Drill'", order, True},
		{"not equal", "JMS_BEA_SELECT('xpath', '/order/item[2]/name') <> 'Mitre Saw'", order, False},
		{"combined with properties", "JMS_BEA_SELECT('xpath', '/order/item[3]/id') = '66' AND n = 3", order, True},
		{"compared with a property", "JMS_BEA_SELECT('xpath', '/order/item[3]/id') = want", props("want", "66").withBody(orderXML), True},
		{"is not null", "JMS_BEA_SELECT('xpath', '/order/item[1]') IS NOT NULL", order, True},
		{"attribute", "JMS_BEA_SELECT('xpath', '/a/@k') = 'v'", props().withBody(`<a k="v"/>`), True},
		{"namespaces ignored by local-name", "JMS_BEA_SELECT('xpath', '/*[local-name()=''a'']/b') = 'x'", props().withBody(`<p:a xmlns:p="urn:x"><b>x</b></p:a>`), True},
		{"declared encoding", "JMS_BEA_SELECT('xpath', '/a') = 'é'", props().withBody("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>\xe9</a>"), True},
		{"white space is a value", "JMS_BEA_SELECT('xpath', '/a') = ' '", props().withBody("<a> </a>"), True},

		// The three NULL cases of "Defining XML Message Selectors Using XML
		// Selector Method".
		{"null: missing end tag", "JMS_BEA_SELECT('xpath', '/order/item') IS NULL", props().withBody("<order><item>1</item>"), True},
		{"null: mismatched tags", "JMS_BEA_SELECT('xpath', '/order') IS NULL", props().withBody("<order><item></order>"), True},
		{"null: not XML", "JMS_BEA_SELECT('xpath', '/order') IS NULL", props().withBody("Hi there!"), True},
		{"null: empty body", "JMS_BEA_SELECT('xpath', '/order') IS NULL", props().withBody(""), True},
		{"null: two roots", "JMS_BEA_SELECT('xpath', '/a') IS NULL", props().withBody("<a>1</a><b/>"), True},
		{"null: text after root", "JMS_BEA_SELECT('xpath', '/a') IS NULL", props().withBody("<a>1</a>junk"), True},
		{"null: no body", "JMS_BEA_SELECT('xpath', '/order') IS NULL", props(), True},
		{"null: element absent", "JMS_BEA_SELECT('xpath', '/order/item[4]/name') IS NULL", order, True},
		{"null: no value", "JMS_BEA_SELECT('xpath', '/order') IS NULL", props().withBody("<order></order>"), True},
		{"null: empty scalar", "JMS_BEA_SELECT('xpath', 'string(/order/x)') IS NULL", order, True},
		{"null compares unknown", "JMS_BEA_SELECT('xpath', '/order/item[2]/name') = 'Mitre Saw'", props().withBody("<order><item>"), Unknown},
		{"null not matched by <>", "JMS_BEA_SELECT('xpath', '/order/none') <> 'x'", order, Unknown},
		{"null in IN", "JMS_BEA_SELECT('xpath', '/order/none') IN ('x')", order, Unknown},
	})
}
