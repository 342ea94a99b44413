package com.github.nexmark.flink.udf;

import org.apache.flink.table.functions.ScalarFunction;

/**
 * The UDF nexmark's q14 creates (CREATE FUNCTION count_char AS '...CountChar'), under its class
 * name so that the query file runs unchanged: how many times the first character of c occurs in
 * s, 0 for a NULL s. flightd runs the SQL rewrite nexmark.CountCharSQL instead.
 */
public class CountChar extends ScalarFunction {
  public long eval(String s, String c) {
    long n = 0;
    if (s != null) {
      for (int i = 0; i < s.length(); i++) {
        if (s.charAt(i) == c.charAt(0)) {
          n++;
        }
      }
    }
    return n;
  }
}
